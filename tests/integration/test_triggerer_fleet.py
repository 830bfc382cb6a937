"""The triggerer on the real fleet (PostgreSQL + Redis): deferred tasks wait without a slot.

One fleet for the module (a worker of 2 slots, a scheduler, a triggerer): hundreds of mapped task
instances defer at once on a trigger class defined in their DAG file, while another DAG's tasks
run on the two slots; the triggerer is SIGKILLed mid-wait and a second one takes every trigger
over; when the gate opens each wakes once, in the same try. Then a deferral's timeout, and a
clear that cancels a trigger.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from psycopg import sql
from sqlalchemy import func, select

from scheduler.dag_sync import sync_dags
from state.core.db import get_engine, session_scope
from state.core.migrate import upgrade
from state.core.models import AssetEvent, DagRun, TaskInstance, Trigger
from state.engine.runs import clear_task_instances, create_run
from tests.conftest import PG_ADMIN_URL, PG_SERVER_URL
from tests.integration.conftest import REDIS, Fleet, _base_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
DAGS = Path(__file__).parent / "trigger_dags"
# The count: 500 waiting at once on a two-slot worker (43 s on this 2-core machine when
# quiet, 170 s when loaded: the waits below grow with the count, never a timing assertion).
MANY = int(os.environ.get("TRADEWIND_TEST_MANY_DEFERRED", "500"))
#: How long starting (or waking) them all may take on a busy machine.
ALL_OF_THEM_SECONDS = 60 + 0.8 * MANY


@pytest.fixture(scope="module")
def trigger_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    name = f"tw_test_triggerer_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = f"{PG_SERVER_URL}/{name}"
    lock, redis_url = _redis_database()
    home = tmp_path_factory.mktemp("triggerer")
    env = _base_env(home, DAGS)
    env.update(
        TRADEWIND_DATABASE_URL=url,
        TRADEWIND_BROKER_URL=redis_url,
        TRADEWIND_TEST_WATCH_REDIS=redis_url,
    )
    os.environ["TRADEWIND_TEST_WATCH_REDIS"] = redis_url  # this process syncs the DAGs too
    upgrade(url)
    with session_scope(url) as session:
        assert not sync_dags(session, DAGS).import_errors
    fleet = Fleet(home, env, url)
    try:
        fleet.start_worker(concurrency=2)
        fleet.start_scheduler()
        fleet.start("triggerer1", [sys.executable, "-m", "cli", "triggerer"])
        yield fleet
    finally:
        os.environ.pop("TRADEWIND_TEST_WATCH_REDIS", None)
        fleet.stop()
        get_engine(url).dispose()
        redis.Redis.from_url(redis_url).flushdb()
        lock.close()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _redis_database() -> tuple[object, str]:
    for number in range(1, 16):
        lock = open(f"/tmp/tradewind-test-redis-db-{number}.lock", "w")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        url = f"{REDIS}/{number}"
        redis.Redis.from_url(url).flushdb()
        return lock, url
    raise RuntimeError("no free Redis database number (1-15) for this test")


def _trigger(fleet: Fleet, dag_id: str, run_id: str, conf: dict[str, object]) -> None:
    with session_scope(fleet.url) as session:
        create_run(session, dag_id, run_id=run_id, conf=conf)


def _count(fleet: Fleet, *where: object) -> int:
    with session_scope(fleet.url) as session:
        return int(session.scalar(select(func.count()).select_from(Trigger).where(*where)) or 0)


def _states(fleet: Fleet, dag_id: str, run_id: str, task_id: str) -> list[tuple[str, int]]:
    with session_scope(fleet.url) as session:
        rows = session.execute(
            select(TaskInstance.state, TaskInstance.try_number).filter_by(
                dag_id=dag_id, run_id=run_id, task_id=task_id
            )
        ).all()
    return [(str(state), tries) for state, tries in rows]


def _holders(fleet: Fleet) -> set[str | None]:
    with session_scope(fleet.url) as session:
        return set(
            session.scalars(
                select(Trigger.claim_token).where(
                    Trigger.fired_at.is_(None), Trigger.ti_id.is_not(None)
                )
            ).all()
        )


def test_hundreds_defer_without_slots_and_a_second_triggerer_takes_them_over(
    trigger_fleet: Fleet,
) -> None:
    fleet = trigger_fleet
    gate = fleet.home / "gate-many"
    _trigger(fleet, "deferred_many", "many", {"gate": str(gate), "count": MANY})

    def all_deferred() -> bool:
        states = _states(fleet, "deferred_many", "many", "wait")
        return len(states) == MANY and all(state == "deferred" for state, _ in states)

    fleet.wait_for(all_deferred, ALL_OF_THEM_SECONDS, what=f"{MANY} deferred task instances")
    # Every slot is free: another DAG's ten tasks run on the worker's two while they wait.
    _trigger(fleet, "busy", "meanwhile", {})
    assert fleet.wait_run("busy", "meanwhile", timeout=60) == "success"
    assert all_deferred()
    waiting = (Trigger.fired_at.is_(None), Trigger.ti_id.is_not(None))
    fleet.wait_for(
        lambda: _count(fleet, *waiting, Trigger.claim_token.is_not(None)) == MANY,
        timeout=120,
        what="the triggerer holding every trigger",
    )
    (first,) = _holders(fleet)

    # SIGKILL the triggerer mid-wait: a second one takes every trigger over once the first's
    # heartbeats are older than the zombie threshold.
    process, _ = fleet.processes[2]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    fleet.start("triggerer2", [sys.executable, "-m", "cli", "triggerer"])
    fleet.wait_for(
        lambda: _holders(fleet) - {first} and first not in _holders(fleet),
        timeout=120,
        what="the second triggerer holding every trigger",
    )
    assert _count(fleet, *waiting) == MANY

    gate.touch()
    assert fleet.wait_run("deferred_many", "many", timeout=ALL_OF_THEM_SECONDS) == "success"
    # Each woke once, in its first try (a deferral costs none), with its own event.
    assert set(_states(fleet, "deferred_many", "many", "wait")) == {("success", 1)}
    assert json.loads(fleet.xcom("deferred_many", "many", "total") or "0") == sum(range(MANY))
    of_tasks = Trigger.ti_id.is_not(None)
    assert _count(fleet, of_tasks, Trigger.fired_at.is_not(None)) == MANY == _count(fleet, of_tasks)
    assert "claimed" in fleet.log("triggerer2")


def test_a_classic_operator_resumes_in_its_method_with_the_event(trigger_fleet: Fleet) -> None:
    fleet = trigger_fleet
    gate = fleet.home / "gate-operator"
    gate.touch()
    _trigger(fleet, "deferred_operator", "op", {"gate": str(gate)})
    assert fleet.wait_run("deferred_operator", "op", timeout=60) == "success"
    assert json.loads(fleet.xcom("deferred_operator", "op", "at_gate") or "") == (
        "at_gate kept try 1"
    )


def test_a_deferral_past_its_timeout_fails_the_task_in_one_line(trigger_fleet: Fleet) -> None:
    fleet = trigger_fleet
    _trigger(fleet, "deferred_timeout", "late", {"gate": str(fleet.home / "never")})
    assert fleet.wait_run("deferred_timeout", "late", timeout=60) == "failed"
    ti = fleet.task_instances("deferred_timeout", "late")["times_out"]
    assert ti.state == "failed" and ti.try_number == 1
    assert ti.error is not None and "\n" not in ti.error
    assert ti.error.startswith("deferral timed out")


def test_clearing_a_deferred_task_cancels_its_trigger(trigger_fleet: Fleet) -> None:
    fleet = trigger_fleet
    gate = fleet.home / "gate-clear"
    _trigger(fleet, "deferred_operator", "cleared", {"gate": str(gate)})

    def deferred() -> bool:
        return _states(fleet, "deferred_operator", "cleared", "at_gate")[0][0] == "deferred"

    fleet.wait_for(deferred, timeout=60, what="the deferral")
    shown = subprocess.run(
        [sys.executable, "-m", "cli", "runs", "show", "deferred_operator", "cleared", "--json"],
        env=fleet.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert '"deferred"' in shown.stdout
    ti = fleet.task_instances("deferred_operator", "cleared")["at_gate"]
    of_ti = Trigger.ti_id == ti.id
    fleet.wait_for(lambda: _count(fleet, of_ti, Trigger.claim_token.is_not(None)) == 1)
    with session_scope(fleet.url) as session:
        run = session.scalars(select(DagRun).filter_by(run_id="cleared")).one()
        assert clear_task_instances(session, run, ["at_gate"]) == 1
    # The trigger is gone with the clear; the task runs again and defers anew.
    fleet.wait_for(
        lambda: "is no longer this triggerer's: cancelled" in _triggerer_logs(fleet),
        what="the triggerer cancelling the cleared task's trigger",
    )
    fleet.wait_for(deferred, timeout=60, what="the new deferral")
    gate.touch()
    assert fleet.wait_run("deferred_operator", "cleared", timeout=60) == "success"
    assert _count(fleet, of_ti) == 1  # the cleared deferral's row went with its trigger


def _triggerer_logs(fleet: Fleet) -> str:
    return "".join(
        fleet.log(name)
        for name in ("triggerer1", "triggerer2")
        if (fleet.home / f"{name}.log").exists()
    )


def test_an_asset_watcher_on_a_redis_list_creates_a_run_per_message(trigger_fleet: Fleet) -> None:
    fleet = trigger_fleet
    queue = redis.Redis.from_url(fleet.env["TRADEWIND_BROKER_URL"])

    def runs() -> int:
        with session_scope(fleet.url) as session:
            query = select(func.count()).select_from(DagRun).filter_by(dag_id="on_orders")
            return int(session.scalar(query) or 0)

    fleet.wait_for(
        lambda: _count(fleet, Trigger.watcher.is_not(None), Trigger.claim_token.is_not(None)) == 1,
        what="the watcher's trigger claimed",
    )
    for number in range(1, 4):
        queue.rpush("orders", json.dumps({"order": number}))
        fleet.wait_for(lambda n=number: runs() == n, timeout=60, what=f"run {number}")
    with session_scope(fleet.url) as session:
        extras = session.scalars(select(AssetEvent.extra).order_by(AssetEvent.id)).all()
        states = set(session.scalars(select(DagRun.state).filter_by(dag_id="on_orders")).all())
    assert [extra["payload"]["value"] for extra in extras] == [{"order": n} for n in (1, 2, 3)]
    assert all(extra["from_trigger"] and extra["watcher"] == "orders_queue" for extra in extras)
    assert states <= {"queued", "running", "success"}
    assert queue.llen("orders") == 0
