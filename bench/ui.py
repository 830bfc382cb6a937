"""Page and API latency of the UI against the size of what they show (issue 13).

One PostgreSQL store holds: a 3-task run (the baseline), a run of one ``.expand`` task with
2,000 task instances, a run of one ``.iterate`` task over 16,194 items (its checkpoints as the
worker writes them), 25 runs of a 200-task DAG (the grid), 3 runs of a DAG of 5,000 tasks in
groups (the grid of apache/airflow#56968's size), and 500 DAGs (the DAG list, measured before and
after they are added). Each page and its API counterpart is fetched ``--n`` times through
FastAPI's test client, signed in as a browser is, in turn with its small case; the figures are
p50 and p95 latency, each divided by the same page for the small case, and the SQL statements
per request.

    python bench/ui.py [--n 40] [--only pages|browse]

Prints a table and writes bench/results/ui.json; ``--only browse`` (or no ``--only``) also
measures the browses of issue 27 on a store of 1,000,000 task instances against an empty one
(bench/ui_browse.py, bench/results/ui_browse.json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from sqlalchemy import event, text, update

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fastapi.testclient import TestClient  # noqa: E402
from fleet_throughput import bench_database  # noqa: E402

from api import create_app  # noqa: E402
from api.security import hash_password  # noqa: E402
from scheduler.dag_sync import sync_dags  # noqa: E402
from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.migrate import upgrade  # noqa: E402
from state.core.models import TaskInstance, TaskStateValue, utcnow  # noqa: E402
from state.engine.runs import create_run  # noqa: E402
from state.records.checkpoints import batch_key  # noqa: E402
from state.records.users import Role, create_user  # noqa: E402
from tradewind.settings import reload_settings  # noqa: E402

DAGS = """
from tradewind import DAG, TaskGroup, chain, dag, task


@task
def step(x: int = 0) -> int:
    return x


@task
def numbers() -> list[int]:
    return list(range(10))


with DAG("small"):
    step.override(task_id="a")() >> step.override(task_id="b")() >> step.override(task_id="c")()

with DAG("mapped"):
    step.expand(x=numbers())

with DAG("items"):
    step.iterate(x=numbers())

with DAG("wide"):
    for i in range(200):
        step.override(task_id=f"t{i:03d}")()

# 5,000 tasks: 20 groups of 200 in chains (every fourth with a nested group of 50 of them), a
# mapped task, and 1,000 outside any group (apache/airflow#56968's size).
with DAG("huge"):
    for g in range(20):
        with TaskGroup(f"g{g:02d}"):
            outer = [step.override(task_id=f"t{i:03d}")() for i in range(200 - 50 * (g % 4 == 0))]
            if g % 4 == 0:
                with TaskGroup("inner"):
                    outer += [step.override(task_id=f"t{i:03d}")() for i in range(50)]
            chain(*outer)
    for i in range(998):
        step.override(task_id=f"top{i:03d}")()
    step.override(task_id="fan").expand(x=numbers())
"""

MANY_DAGS = """
from tradewind import DAG, task


@task
def only() -> None:
    pass


for i in range(500):
    with DAG(f"dag_{i:03d}", tags=["bench"]):
        only()
"""
PASSWORD = "bench password"
HUGE_RUNS = 3


@contextmanager
def statements(url: str) -> Iterator[list[str]]:
    seen: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.startswith(("BEGIN", "PRAGMA")):
            seen.append(statement)

    engine = get_engine(url)
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


def measure_clients(
    clients: list[tuple[TestClient, str]], path: str, n: int
) -> list[dict[str, float]]:
    """``path`` ``n`` times on each (client, store URL), their requests taken in turn."""
    seen: list[list[str]] = []
    for client, url in clients:
        client.get(path)  # warm
        with statements(url) as one:
            reply = client.get(path)
        assert reply.status_code == 200, (path, reply.status_code, reply.text[:300])
        seen.append(one)
    times: list[list[float]] = [[] for _ in clients]
    for _ in range(n):
        for index, (client, _url) in enumerate(clients):
            start = time.perf_counter()
            client.get(path)
            times[index].append(time.perf_counter() - start)
    return [_figures(taken, one) for taken, one in zip(times, seen, strict=True)]


def _figures(taken: list[float], seen: list[str]) -> dict[str, float]:
    taken.sort()
    return {
        "p50_ms": 1000 * statistics.median(taken),
        "p95_ms": 1000 * taken[int(0.95 * (len(taken) - 1))],
        "statements": len(seen),
    }


def measure(client: TestClient, url: str, path: str, n: int) -> dict[str, float]:
    return measure_pair(client, url, (path,), n)[0]


def measure_pair(
    client: TestClient, url: str, paths: tuple[str, ...], n: int
) -> list[dict[str, float]]:
    """Each path ``n`` times, their requests taken in turn: on a machine others load, a
    large page and its small baseline then see the same load, and their ratio holds."""
    seen: list[list[str]] = []
    for path in paths:
        client.get(path)  # warm: the structure's parse, the template's compile
        with statements(url) as one:
            reply = client.get(path)
        assert reply.status_code == 200, (path, reply.status_code, reply.text[:300])
        seen.append(one)
    times: list[list[float]] = [[] for _ in paths]
    for _ in range(n):
        for index, path in enumerate(paths):
            start = time.perf_counter()
            client.get(path)
            times[index].append(time.perf_counter() - start)
    return [_figures(taken, one) for taken, one in zip(times, seen, strict=True)]


def _set(url: str, dag_id: str, run_id: str, task_id: str, **values: object) -> None:
    with session_scope(url) as session:
        session.execute(
            update(TaskInstance)
            .where(
                TaskInstance.dag_id == dag_id,
                TaskInstance.run_id == run_id,
                TaskInstance.task_id == task_id,
            )
            .values(**values)
        )


def populate(url: str) -> None:
    """The runs: small, 2,000 mapped, 16,194 items, 25 of 200 tasks."""
    with session_scope(url) as session:
        for dag_id in ("small", "mapped", "items"):
            create_run(session, dag_id, run_id="r1")
        for n in range(25):
            create_run(session, "wide", run_id=f"w{n:02d}")
        for n in range(HUGE_RUNS):
            create_run(session, "huge", run_id=f"h{n}")
    now = utcnow()
    with session_scope(url) as session:
        session.query(TaskInstance).filter_by(dag_id="mapped", task_id="step").delete()
        session.add_all(
            TaskInstance(dag_id="mapped", run_id="r1", task_id="step", map_index=i,
                         state="success" if i % 10 else "running", try_number=1, start_date=now)
            for i in range(2000)
        )  # fmt: skip
    running = {"try_number": 1, "state": "running", "start_date": now}
    _set(url, "items", "r1", "step", items_total=16194, **running)
    with session_scope(url) as session:
        for number, start in enumerate(range(0, 16194, 100)):
            outcomes = [
                {"i": i, "f": f"f{i}", "s": "failed" if i % 997 == 1 else "success", "e": "boom"}
                for i in range(start, min(start + 100, 16194))
            ]
            value = json.dumps({"generation": 0, "outcomes": outcomes})
            session.add(TaskStateValue(dag_id="items", run_id="r1", task_id="step",
                                       key=batch_key(number), value=value))  # fmt: skip
    with get_engine(url).connect() as connection:  # what autovacuum does after a bulk load
        connection.execute(text("ANALYZE"))
        connection.commit()  # in a transaction, the statistics are rolled back with it


def sign_in(client: TestClient) -> None:
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/auth/login").text)
    assert token
    form = {"username": "admin", "password": PASSWORD, "csrf_token": token.group(1), "next": "/"}
    assert client.post("/auth/login", data=form, follow_redirects=False).status_code == 303


PAGES = {
    # name: (page or API, path for the large case, path for the small case)
    "run page, 2,000 mapped": ("/dags/mapped/runs/r1", "/dags/small/runs/r1"),
    "run page, 16,194 items": ("/dags/items/runs/r1", "/dags/small/runs/r1"),
    "task page, 2,000 mapped": ("/dags/mapped/runs/r1/tasks/step", "/dags/small/runs/r1/tasks/b"),
    "task page, 16,194 items": ("/dags/items/runs/r1/tasks/step", "/dags/small/runs/r1/tasks/b"),
    "API listMapped, 2,000": (
        "/api/v2/dags/mapped/dagRuns/r1/taskInstances/step/listMapped",
        "/api/v2/dags/small/dagRuns/r1/taskInstances",
    ),
    "API task instance, 16,194 items": (
        "/api/v2/dags/items/dagRuns/r1/taskInstances/step",
        "/api/v2/dags/small/dagRuns/r1/taskInstances/b",
    ),
    "grid page, 25 runs x 200 tasks": ("/dags/wide", "/dags/small"),
    "grid partial (the poll), 25 x 200": ("/dags/wide/grid", "/dags/small/grid"),
    "grid page, 3 runs x 5,000 tasks": ("/dags/huge", "/dags/small"),
    "grid page, 5,000 tasks, rows 2,451-2,500": ("/dags/huge?rows=50", "/dags/small"),
    "API grid-like list, 25 x 200": (
        "/api/v2/dags/wide/dagRuns/~/taskInstances?limit=100",
        "/api/v2/dags/small/dagRuns/~/taskInstances?limit=100",
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="requests per page (default 40)")
    parser.add_argument(
        "--only",
        choices=("pages", "browse"),
        help="pages: the run, task and grid pages; browse: the browses on 1,000,000 task "
        "instances (bench/ui_browse.py); both when not given",
    )
    args = parser.parse_args()
    if args.only != "browse":
        pages(args.n)
    if args.only != "pages":
        browse(args.n)


def browse(n: int) -> None:
    """The browses on a large store and an empty one (bench/ui_browse.py)."""
    import ui_browse

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:

        def make_store(stack: ExitStack, prefix: str) -> tuple[TestClient, str]:
            url = stack.enter_context(bench_database(prefix))
            dags = Path(tmp) / prefix
            dags.mkdir()
            os.environ.update(
                TRADEWIND_HOME=f"{tmp}/{prefix}home", TRADEWIND_DAGS_FOLDER=str(dags),
                TRADEWIND_DATABASE_URL=url,
            )  # fmt: skip
            settings = reload_settings()
            upgrade(url)
            (dags / "bench.py").write_text(DAGS)
            with session_scope(url) as session:
                sync_dags(session, dags)
                create_user(session, "admin", hash_password(PASSWORD), Role.ADMIN)
            client = stack.enter_context(TestClient(create_app(settings)))
            sign_in(client)
            return client, url

        _report(ui_browse.bench(stack, make_store, n), "ui_browse.json")


def pages(n: int) -> None:
    """The run, task and grid pages against their small case (issue 13)."""
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp, bench_database("ui_") as url:
        dags = Path(tmp) / "dags"
        dags.mkdir()
        os.environ.update(
            TRADEWIND_HOME=f"{tmp}/home", TRADEWIND_DAGS_FOLDER=str(dags),
            TRADEWIND_DATABASE_URL=url,
        )  # fmt: skip
        settings = reload_settings()
        upgrade(url)
        (dags / "bench.py").write_text(DAGS)
        with session_scope(url) as session:
            sync_dags(session, dags)
            create_user(session, "admin", hash_password(PASSWORD), Role.ADMIN)
        populate(url)
        with TestClient(create_app(settings)) as client:
            sign_in(client)
            small_list = {
                "page": measure(client, url, "/dags", n),
                "api": measure(client, url, "/api/v2/dags?limit=100", n),
            }
            for name, (large, small) in PAGES.items():
                if client.get(large).status_code != 200:
                    results[name] = {"skipped": f"{large} answers {client.get(large).status_code}"}
                    continue
                results[name] = ratio(*measure_pair(client, url, (large, small), n))
            (dags / "many.py").write_text(MANY_DAGS)
            with session_scope(url) as session:
                sync_dags(session, dags)
            results["DAG list page, 500 DAGs"] = ratio(
                measure(client, url, "/dags", n), small_list["page"]
            )
            results["API DAG list, 500 DAGs"] = ratio(
                measure(client, url, "/api/v2/dags?limit=100", n), small_list["api"]
            )
    _report(results, "ui.json")


def ratio(large: dict[str, float], small: dict[str, float]) -> dict[str, object]:
    return {
        **large,
        "small_p50_ms": small["p50_ms"],
        "small_statements": small["statements"],
        "p50_ratio": large["p50_ms"] / small["p50_ms"],
        "p95_ratio": large["p95_ms"] / small["p95_ms"],
    }


def _report(results: dict[str, dict[str, object]], name: str) -> None:
    print(f"{'':34} {'p50 ms':>8} {'p95 ms':>8} {'x small p50':>11} {'x p95':>6} {'stmts':>5}")
    for name, row in results.items():
        if "skipped" in row:
            print(f"{name:34} skipped: {row['skipped']}")
            continue
        print(
            f"{name:34} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['p50_ratio']:11.2f}"
            f" {row['p95_ratio']:6.2f} {row['statements']:5d}"
        )
    if name == "ui.json":  # ui_browse.json is written with what was loaded
        out = ROOT / "bench" / "results" / name
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"written {out}")


if __name__ == "__main__":
    main()
