"""Scale-out: the same N noop task instances with 1, 2 and 4 worker hosts and 1 and 2 schedulers.

Hosts are network namespaces on one bridge (the lab of ``tests/hosts/``, as root): a store host
with its own PostgreSQL and Redis (AOF on), scheduler hosts running ``tradewind scheduler``,
worker hosts each running ``celery -A worker worker -c 1``, and for each configuration of several
worker hosts its control: one worker host with as many pool processes (``-c``) under as many
schedulers. On a 2-core machine throughput cannot
grow with hosts, so each configuration also reports what a task instance costs: CPU time of every
process in the lab (by role: workers, schedulers, store), SQL statements the store ran
(``pg_stat_statements``, the observer's own excluded) and Redis commands. A design without
cross-host coordination keeps those flat whatever the number of hosts: the "÷ control" column is
a configuration's CPU per task instance over its control's.

    python bench/scale_out.py [--n 2000] [--workers 1 2 4] [--schedulers 1 2]

Prints a table, writes bench/results/scale_out.json and docs/benchmarks/scale_out.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg
import redis
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "hosts"))

from labfleet import HostsFleet, wait_for  # noqa: E402
from labstore import Store, start_store  # noqa: E402
from netlab import Lab, cannot_make_namespaces, ip, remove_stale  # noqa: E402

from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.models import TaskInstance  # noqa: E402
from state.engine.runs import create_run  # noqa: E402

DAG_FILE = """
import os
from tradewind import DAG, task

@task
def noop():
    return None

N = int(os.environ["BENCH_N"])
with DAG("scale_out", max_active_tasks=N):
    for i in range(N):
        noop.override(task_id=f"t{i}")()
"""
WORKERS = ["w1", "w2", "w3", "w4"]
SCHEDULERS = ["s1", "s2"]
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Figures:
    workers: int
    concurrency: int
    schedulers: int
    tis_per_s: float
    cpu_ms_per_ti: float
    net_cpu_ms_per_ti: float
    idle_cpu_ms_per_s: float
    worker_cpu_ms_per_ti: float
    scheduler_cpu_ms_per_ti: float
    store_cpu_ms_per_ti: float
    statements_per_ti: float
    redis_commands_per_ti: float


def cpu_seconds(lab: Lab, host: str) -> float:
    """CPU time of the processes in ``host``'s namespace and of their reaped children."""
    total = 0
    for pid in ip("netns", "pids", lab.hosts[host].namespace).split():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile: counted in its parent's children's time
        total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def cpu_by_role(lab: Lab) -> dict[str, float]:
    roles = {"worker": WORKERS, "scheduler": SCHEDULERS, "store": ["store"]}
    return {role: sum(cpu_seconds(lab, h) for h in hosts) for role, hosts in roles.items()}


def idle_cpu_seconds_per_second(lab: Lab, seconds: float = 5.0) -> float:
    """What the lab's processes burn with nothing to do (timers, polls, loops over no work):
    a cost per host and second, not per task instance, taken out of ``net_cpu_ms_per_ti``."""
    before = sum(cpu_by_role(lab).values())
    time.sleep(seconds)
    return (sum(cpu_by_role(lab).values()) - before) / seconds


def statements(store: Store) -> int:
    """Statements the hosts ran on the store (as ``postgres``; the observer is ``observer``)."""
    with psycopg.connect(store.observer_database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s"
            " JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = 'postgres'"
        ).fetchone()
    return int(row[0]) if row else 0


def reset_redis_stats(store: Store) -> None:
    client = redis.Redis.from_url(store.observer_redis_url)
    try:
        client.config_resetstat()
    finally:
        client.close()


def redis_commands(store: Store) -> int:
    client = redis.Redis.from_url(store.observer_redis_url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return sum(int(entry["calls"]) for name, entry in stats.items() if name != "cmdstat_info")


def run_config(lab: Lab, store: Store, dags: Path, folder: Path, workers: int, schedulers: int,
               n: int, concurrency: int = 1) -> Figures:  # fmt: skip
    store.reset_database()
    store.flush_redis()
    name = f"w{workers}-c{concurrency}-s{schedulers}"
    fleet = HostsFleet(lab, store, folder / name, settings={}, dags=dags)
    observer = store.observer_database_url.replace("postgres@", "observer@")
    try:
        for host in WORKERS[:workers]:
            fleet.start_worker(host, concurrency=concurrency)
        fleet.wait_workers_ready(*WORKERS[:workers])
        for host in SCHEDULERS[:schedulers]:
            fleet.start_scheduler(host)
        time.sleep(3)  # the schedulers' first sync and loops, before the clock starts
        with psycopg.connect(observer, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_statements_reset()")
        reset_redis_stats(store)
        idle = idle_cpu_seconds_per_second(lab)
        cpu_before = cpu_by_role(lab)
        started = time.time()
        with session_scope(observer) as session:
            create_run(session, "scale_out", run_id="bench")
        last_end = wait_all_done(observer, n)
        seconds = time.time() - started
        cpu = {role: used - cpu_before[role] for role, used in cpu_by_role(lab).items()}
        net = sum(cpu.values()) - idle * seconds
        return Figures(
            workers, concurrency, schedulers, n / (last_end - started),
            sum(cpu.values()) * 1000 / n, net * 1000 / n, idle * 1000, cpu["worker"] * 1000 / n,
            cpu["scheduler"] * 1000 / n, cpu["store"] * 1000 / n,
            statements(store) / n, redis_commands(store) / n,
        )  # fmt: skip
    finally:
        fleet.close()
        get_engine(observer).dispose()  # its database is dropped before the next configuration


def wait_all_done(url: str, n: int) -> float:
    """Wait until the run's N task instances succeeded; the last one's end, as a timestamp."""
    done = select(func.count()).where(TaskInstance.state == "success")

    def finished() -> bool:
        with session_scope(url) as session:
            return session.scalar(done) == n

    wait_for(finished, f"{n} task instances to succeed", timeout=1800)
    with session_scope(url) as session:
        last = session.scalar(select(func.max(TaskInstance.end_date)))
    assert last is not None
    return last.timestamp()


def plot(results: list[Figures], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    labels = [f"{r.workers}w{'' if r.concurrency == 1 else f' -c{r.concurrency}'}/{r.schedulers}s"
              for r in results]  # fmt: skip
    left.bar(labels, [r.tis_per_s for r in results], color="tab:blue")
    left.set_title("noop task instances/s (worker hosts -c 1 / scheduler hosts)")
    bottom = [0.0] * len(results)
    for role, colour in (("worker", "tab:blue"), ("scheduler", "tab:orange"), ("store", "grey")):
        values = [getattr(r, f"{role}_cpu_ms_per_ti") for r in results]
        right.bar(labels, values, bottom=bottom, color=colour, label=role)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    net = [r.net_cpu_ms_per_ti for r in results]
    right.plot(labels, net, "k_", markersize=24, markeredgewidth=2, label="all, net of idle")
    right.set_title("CPU ms per task instance, by host role")
    right.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--schedulers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    reason = cannot_make_namespaces()
    if reason is not None:
        raise SystemExit(f"scale_out: {reason}")
    remove_stale()
    os.environ["BENCH_N"] = str(args.n)
    lab = Lab().build(["store", *SCHEDULERS, *WORKERS])
    try:
        store = start_store(lab, "store")
        with store.admin() as admin:
            admin.execute("CREATE ROLE observer LOGIN SUPERUSER")
        folder = lab.folder("bench")
        dags = folder / "dags"
        dags.mkdir()
        (dags / "scale_out.py").write_text(DAG_FILE)
        # Each configuration of several worker hosts is followed by its control: one host with as
        # many pool processes (-c), under the same schedulers. What the hosts cost beyond their
        # control is the hosts'; what both cost beyond one pool process is more processes
        # sharing two cores. Alternating them spreads a burst of outside load over both.
        results = []
        for workers in args.workers:
            for schedulers in args.schedulers:
                results.append(run_config(lab, store, dags, folder, workers, schedulers, args.n))
                if workers > 1:
                    results.append(run_config(lab, store, dags, folder, 1, schedulers, args.n,
                                              concurrency=workers))  # fmt: skip
    finally:
        lab.remove()
    report(results, args.n)


HEADERS = ["workers", "-c", "scheds", "TIs/s", "CPU ms/TI", "net of idle", "idle ms/s", "workers",
           "scheds", "store", "SQL/TI", "Redis/TI", "÷ control"]  # fmt: skip


def control_ratios(results: list[Figures]) -> list[float | None]:
    """Each hosts configuration's net CPU per task instance ÷ its control's: one host with as
    many pool processes under as many schedulers (a single host -c 1 is its own control)."""
    controls = {(r.workers * r.concurrency, r.schedulers): r for r in results if r.workers == 1}
    ratios: list[float | None] = []
    for r in results:
        control = controls.get((r.workers, r.schedulers)) if r.concurrency == 1 else None
        ratios.append(r.net_cpu_ms_per_ti / control.net_cpu_ms_per_ti if control else None)
    return ratios


def report(results: list[Figures], n: int) -> None:
    print(f"{n} noop task instances; CPU ms per task instance, then by host role")
    print("".join(f"{name:>12}" for name in HEADERS))
    ratios = control_ratios(results)
    for figures, ratio in zip(results, ratios, strict=True):
        values = [*asdict(figures).values(), ratio if ratio else "-"]
        print("".join(f"{value:>12.2f}" if isinstance(value, float) else f"{value:>12}"
                      for value in values))  # fmt: skip
    configurations = [{**asdict(r), "net_cpu_per_ti_over_control": ratio}
                      for r, ratio in zip(results, ratios, strict=True)]  # fmt: skip
    out = {"n": n, "cpus": os.cpu_count(), "configurations": configurations}
    (ROOT / "bench" / "results" / "scale_out.json").write_text(json.dumps(out, indent=2) + "\n")
    plot(results, ROOT / "docs" / "benchmarks" / "scale_out.png")


if __name__ == "__main__":
    main()
