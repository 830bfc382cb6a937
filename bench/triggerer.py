"""The triggerer under load: N deferred ``TimeDeltaTrigger``s on one triggerer (PostgreSQL).

N task instances are written ``deferred``, each with the trigger a ``TimeDeltaTrigger`` stores
(a ``DateTimeTrigger`` at its moment), their moments spread over ``--spread`` seconds starting
``--lead`` seconds after the start. One ``tradewind triggerer --capacity N`` process claims them
all; while they wait its CPU and memory are sampled (``/proc``); then, as each comes due, the
delay from its moment to the task instance's move back to ``scheduled`` (the event recorded:
``trigger.fired_at - moment``, both written by this machine's clock) gives p50/p99/max.

Memory per waiting trigger is the triggerer's RSS with all N running, less its RSS before it
claimed any, over N. The resumed try itself (queued by the scheduler, run by a worker) is not in
the delay: the scheduler's pass follows at once (the event notifies it).

    python bench/triggerer.py [--count 10000] [--spread 60] [--lead 40]

Prints a table and writes bench/results/triggerer.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy import insert, select, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.migrate import upgrade  # noqa: E402
from state.core.models import TaskInstance, Trigger  # noqa: E402
from tradewind.triggers.base import serialized  # noqa: E402
from tradewind.triggers.temporal import DateTimeTrigger  # noqa: E402

PG = "postgresql://postgres@127.0.0.1:5432"
TICKS = os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def seed(url: str, count: int, first: dt.datetime, spread: float) -> None:
    """``count`` deferred task instances of one run, each with its trigger's row."""
    tis, triggers = [], []
    for index in range(count):
        moment = first + dt.timedelta(seconds=spread * index / max(1, count - 1))
        classpath, kwargs = serialized(DateTimeTrigger(moment))
        tis.append(
            {
                "dag_id": "bench_deferred",
                "run_id": "r1",
                "task_id": "wait",
                "map_index": index,
                "state": "deferred",
                "try_number": 1,
                "next_method": "execute_complete",
                "next_kwargs": {},
            }
        )
        triggers.append({"classpath": classpath, "kwargs": kwargs, "try_number": 1})
    with session_scope(url) as session:
        session.execute(insert(TaskInstance), tis)
        ids = session.scalars(select(TaskInstance.id).order_by(TaskInstance.map_index)).all()
        now = dt.datetime.now(dt.UTC)
        rows = [
            {**t, "ti_id": ti_id, "created_at": now} for t, ti_id in zip(triggers, ids, strict=True)
        ]
        session.execute(insert(Trigger), rows)


def moments(url: str) -> list[tuple[dt.datetime, dt.datetime | None]]:
    with session_scope(url) as session:
        rows = session.execute(select(Trigger.kwargs, Trigger.fired_at)).all()
    return [(dt.datetime.fromisoformat(k["moment"]["value"]), fired) for k, fired in rows]


def held(url: str) -> int:
    with session_scope(url) as session:
        query = text("SELECT count(*) FROM trigger WHERE claim_token IS NOT NULL")
        return int(session.execute(query).scalar_one())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--spread", type=float, default=60.0)
    parser.add_argument("--lead", type=float, default=40.0)
    options = parser.parse_args()
    name = f"tw_bench_triggerer_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{PG}/test", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = f"{PG}/{name}"
    home = Path(f"/tmp/{name}")
    home.mkdir()
    process = None
    try:
        upgrade(url)
        start = dt.datetime.now(dt.UTC)
        seed(url, options.count, start + dt.timedelta(seconds=options.lead), options.spread)
        env = {
            **os.environ,
            "TRADEWIND_DATABASE_URL": url,
            "TRADEWIND_HOME": str(home),
            "TRADEWIND_DAGS_FOLDER": str(home),
        }
        log = (home / "triggerer.log").open("wb")
        argv = [sys.executable, "-m", "cli", "triggerer", "--capacity", str(options.count)]
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        time.sleep(1.0)  # started, nothing claimed yet: the claim loop runs each second
        before = rss_kb(process.pid)
        claimed_at = time.monotonic()
        while held(url) < options.count:
            time.sleep(0.2)
        claim_seconds = time.monotonic() - claimed_at
        time.sleep(2.0)
        waiting_rss = rss_kb(process.pid)
        cpu0, wall0 = cpu_seconds(process.pid), time.monotonic()
        window = max(
            1.0, (start + dt.timedelta(seconds=options.lead) - dt.datetime.now(dt.UTC)).seconds - 2
        )
        time.sleep(min(window, 15.0))
        waiting_cpu = (cpu_seconds(process.pid) - cpu0) / (time.monotonic() - wall0)
        deadline = time.monotonic() + options.lead + options.spread + 60
        while time.monotonic() < deadline:
            found = moments(url)
            if all(fired is not None for _, fired in found):
                break
            time.sleep(1.0)
        delays = sorted((fired - moment).total_seconds() for moment, fired in found if fired)
        result = {
            "count": options.count,
            "spread_seconds": options.spread,
            "claim_seconds": round(claim_seconds, 2),
            "rss_before_kb": before,
            "rss_waiting_kb": waiting_rss,
            "kb_per_waiting_trigger": round((waiting_rss - before) / options.count, 2),
            "cpu_while_waiting": round(waiting_cpu, 4),
            "fired": len(delays),
            "delay_p50_s": round(statistics.median(delays), 3),
            "delay_p99_s": round(delays[int(0.99 * (len(delays) - 1))], 3),
            "delay_max_s": round(delays[-1], 3),
            "delay_min_s": round(delays[0], 3),
        }
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
        get_engine(url).dispose()
        with psycopg.connect(f"{PG}/test", autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
    width = max(len(key) for key in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    out = ROOT / "bench" / "results" / "triggerer.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
