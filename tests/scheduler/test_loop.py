"""The scheduler loop on SQLite with no broker: what ``Scheduler.run_once`` queues and rescues.

Publishing is captured (``scheduler.loop.publish_many`` is replaced); everything else is real: the
DAG folder is synced from files, runs are scheduled, zombies reaped and lost messages re-sent.
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import make_url, select, update

from broker_config import message_of
from scheduler import loop
from scheduler.loop import Scheduler
from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagImportError, DagModel, TaskInstance, utcnow
from state.core.transitions import Fence, TryFenced
from state.engine.end import record_end
from state.engine.outcomes import Succeeded
from state.engine.scheduling import Enqueue
from state.engine.try_life import HeldTry, claim_try, judge
from state.records.values import TIKey, write_xcom
from tests.state.harness import Home, tradewind_home
from worker.supervisor.start_beats import StartBeats

TI = TaskInstanceState

DAGS = """
import datetime as dt
from tradewind import dag, task

@task(retries=1, retry_delay=dt.timedelta(seconds=0))
def extract():
    return 1

@task
def side():
    pass

@task
def load(x):
    pass

@dag(dag_id="etl")
def etl():
    load(extract())
    side()

etl()

@task
def once():
    pass

@dag(dag_id="single")
def single():
    once()

single()
"""


class Published:
    """What the loop handed to ``publish_many``, with each try's state in SQL at that moment."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.batches: list[list[Enqueue]] = []
        self.committed_states: list[str] = []

    def __call__(self, app: Any, ready: list[Enqueue]) -> int:
        assert app is STUB_APP
        self.batches.append(list(ready))
        # A plain connection sees only what is committed: a message must never go out first.
        with sqlite3.connect(self.database) as connection:
            for enqueue in ready:
                query = "SELECT state FROM task_instance WHERE id = ?"
                [(state,)] = connection.execute(query, (enqueue.ti_id,)).fetchall()
                self.committed_states.append(state)
        return len(ready)

    def take(self) -> list[Enqueue]:
        taken = [enqueue for batch in self.batches for enqueue in batch]
        self.batches.clear()
        return taken


STUB_APP = SimpleNamespace(main="stub")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch, max_queued_resends="2") as made:
        made.write_dag(DAGS)
        yield made


@pytest.fixture
def published(home: Home, monkeypatch: pytest.MonkeyPatch) -> Published:
    database = make_url(home.url).database
    assert database is not None
    capture = Published(database)
    monkeypatch.setattr(loop, "publish_many", capture)
    return capture


@pytest.fixture
def scheduler(home: Home, published: Published) -> Scheduler:
    return Scheduler(home.settings, app=STUB_APP)  # type: ignore[arg-type]


def test_run_once_syncs_and_queues_the_first_tasks_of_a_run(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    home.sync()
    run_pk = home.trigger("etl", run_id="r1")

    stats = scheduler.run_once()

    queued = published.take()
    assert sorted((e.task_id, e.try_number, e.run_id) for e in queued) == [
        ("extract", 1, "r1"),
        ("side", 1, "r1"),
    ]
    assert published.committed_states == ["queued", "queued"]
    assert (stats.runs, stats.queued, stats.resent, stats.zombies) == (1, 2, 0, 0)
    assert home.states(run_pk) == {"extract": TI.QUEUED, "side": TI.QUEUED, "load": TI.NONE}
    assert home.run_state(run_pk) == DagRunState.RUNNING

    assert scheduler.run_once().queued == 0  # nothing is queued twice
    assert published.take() == []


def test_run_once_leaves_a_paused_dag_alone(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    home.sync()
    run_pk = home.trigger("single")
    with session_scope(home.url) as session:
        session.get_one(DagModel, "single").is_paused = True
    scheduler.run_once()
    assert published.take() == []
    assert home.run_state(run_pk) == DagRunState.QUEUED


def claim(home: Home, enqueue: Enqueue) -> HeldTry:
    """Play a supervisor that claims the try (and then goes silent)."""
    with session_scope(home.url) as session:
        claimed = claim_try(session, message_of(enqueue))
    assert isinstance(claimed, HeldTry)
    return claimed


def backdate(home: Home, ti_id: int, **columns: dt.datetime) -> None:
    """Move a task instance's timestamps into the past (not a state: no transition)."""
    with session_scope(home.url) as session:
        session.execute(update(TaskInstance).where(TaskInstance.id == ti_id).values(**columns))


def long_ago(seconds: float) -> dt.datetime:
    return utcnow() - dt.timedelta(seconds=seconds + 1)


def etl_queued(
    home: Home, scheduler: Scheduler, published: Published
) -> tuple[int, dict[str, Enqueue]]:
    """A new run of ``etl`` after one loop: its pk, and its first tries by task id."""
    home.sync()
    run_pk = home.trigger("etl")
    scheduler.run_once()
    return run_pk, {e.task_id: e for e in published.take()}


def test_a_zombie_is_given_up_and_its_old_fence_can_write_nothing(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    run_pk, queued = etl_queued(home, scheduler, published)
    zombie = claim(home, queued["extract"])
    alive = claim(home, queued["side"])
    threshold = home.settings.zombie_threshold_seconds
    backdate(home, zombie.fence.ti_id, last_heartbeat=long_ago(threshold))

    stats = scheduler.run_once()

    assert stats.zombies == 1
    ti = home.ti(run_pk, "extract")
    assert (ti.state, ti.try_number) == (TI.UP_FOR_RETRY, 1)
    assert ti.error == f"zombie: no heartbeat for over {threshold:g}s"
    assert ti.next_retry_at is not None
    assert home.ti(run_pk, "side").state == TI.RUNNING  # a fresh heartbeat is left alone
    assert alive.fence.ti_id != zombie.fence.ti_id

    # The presumed-dead supervisor wakes up: its writes are refused, its final state too.
    assert_fenced_out(home, zombie)
    assert home.ti(run_pk, "extract").state == TI.UP_FOR_RETRY

    # The retry is due at once (retry_delay=0): the next loop queues try 2...
    scheduler.run_once()
    [retry] = published.take()
    assert (retry.task_id, retry.try_number) == ("extract", 2)
    claim(home, retry)
    # ...and the old try still cannot write over the live one.
    assert_fenced_out(home, zombie)
    assert home.ti(run_pk, "extract").state == TI.RUNNING


def test_a_try_still_starting_is_beaten_for_and_is_no_zombie(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    run_pk, queued = etl_queued(home, scheduler, published)
    starting, forgotten = claim(home, queued["extract"]), claim(home, queued["side"])
    threshold = home.settings.zombie_threshold_seconds
    for claimed in (starting, forgotten):
        backdate(home, claimed.fence.ti_id, last_heartbeat=long_ago(threshold))
    beats = StartBeats()

    with beats.starting(home.url, starting.fence, interval=0.05):
        deadline = utcnow() + dt.timedelta(seconds=10)
        while home.ti(run_pk, "extract").last_heartbeat < utcnow() - dt.timedelta(seconds=1):
            assert utcnow() < deadline, "no heartbeat while the try was starting"
        stats = scheduler.run_once()

    assert stats.zombies == 1  # the try nobody beat for
    assert home.ti(run_pk, "extract").state == TI.RUNNING
    assert home.ti(run_pk, "side").state == TI.FAILED  # no retries left
    # A try taken away while it starts: its beats stop, quietly; its supervisor learns it.
    with beats.starting(home.url, forgotten.fence, interval=0.01):
        deadline = utcnow() + dt.timedelta(seconds=10)
        while beats._starting:
            assert utcnow() < deadline, "still beating for a fenced try"
    assert home.ti(run_pk, "side").state == TI.FAILED


def assert_fenced_out(home: Home, old: HeldTry) -> None:
    with pytest.raises(TryFenced), session_scope(home.url) as session:
        write_xcom(session, old.fence, old.ti, "return_value", "1")
    with session_scope(home.url) as session:
        assert record_end(session, judge(old, Succeeded(), utcnow())) is False


def test_a_zombie_on_its_last_try_fails(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    home.sync()
    run_pk = home.trigger("single")
    scheduler.run_once()
    [enqueue] = published.take()
    zombie = claim(home, enqueue)
    backdate(home, enqueue.ti_id, last_heartbeat=long_ago(home.settings.zombie_threshold_seconds))

    scheduler.run_once()
    ti = home.ti(run_pk, "once")
    assert (ti.state, ti.next_retry_at) == (TI.FAILED, None)
    assert ti.error is not None and ti.error.startswith("zombie")
    assert_fenced_out(home, zombie)
    scheduler.run_once()
    assert home.run_state(run_pk) == DagRunState.FAILED


def test_a_stalled_queued_try_is_resent_with_the_same_try_then_failed(
    home: Home, scheduler: Scheduler, published: Published, caplog: pytest.LogCaptureFixture
) -> None:
    home.sync()
    run_pk = home.trigger("single")
    scheduler.run_once()
    [first] = published.take()
    timeout = home.settings.task_queued_timeout_seconds
    assert home.settings.max_queued_resends == 2

    for resends in (1, 2):
        backdate(home, first.ti_id, queued_at=long_ago(timeout))
        stats = scheduler.run_once()
        assert stats.resent == 1
        assert published.take() == [first]  # the same try: no try is consumed
        ti = home.ti(run_pk, "once")
        assert (ti.state, ti.try_number, ti.queued_resends) == (TI.QUEUED, 1, resends)

    scheduler.run_once()  # not stalled yet: queued_at moved with the last re-send
    assert published.take() == []

    backdate(home, first.ti_id, queued_at=long_ago(timeout))
    with caplog.at_level(logging.ERROR, logger="tradewind.scheduler"):
        assert scheduler.run_once().resent == 0
    assert published.take() == []
    ti = home.ti(run_pk, "once")
    assert (ti.state, ti.try_number) == (TI.FAILED, 1)
    assert ti.error == "queued too long: its message was sent 3 times, never started"
    assert "queued too long" in caplog.text


def test_a_resent_try_runs_once_whichever_copy_arrives_first(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    home.sync()
    home.trigger("single")
    scheduler.run_once()
    [first] = published.take()
    backdate(home, first.ti_id, queued_at=long_ago(home.settings.task_queued_timeout_seconds))
    scheduler.run_once()
    [resent] = published.take()

    claim(home, resent)
    with session_scope(home.url) as session:
        late = claim_try(session, message_of(first))
    assert isinstance(late, str) and "stale or duplicate" in late


BROKEN = """
from tradewind import dag, task

@task
def nope(:
    pass
"""


def test_a_dag_file_with_a_syntax_error_is_recorded_and_disturbs_no_other_dag(
    home: Home, scheduler: Scheduler, published: Published, caplog: pytest.LogCaptureFixture
) -> None:
    home.sync()
    run_pk = home.trigger("single")
    broken = home.write_dag(BROKEN, name="broken.py")

    with caplog.at_level(logging.ERROR, logger="tradewind.scheduler"):
        stats = scheduler.run_once()

    with session_scope(home.url) as session:
        [error] = session.scalars(select(DagImportError)).all()
        assert error.fileloc == str(broken.resolve())
        assert error.error.startswith("SyntaxError")
        assert "broken.py, line 5" in error.error
        models = {m.dag_id: m.is_active for m in session.scalars(select(DagModel))}
    assert models == {"etl": True, "single": True}
    assert stats.queued == 1
    assert [e.task_id for e in published.take()] == ["once"]
    assert home.ti(run_pk, "once").state == TI.QUEUED
    assert "does not import" in caplog.text

    # Fixed, the file's error goes away.
    broken.write_text("x = 1\n")
    scheduler.sync_if_changed(force=True)
    with session_scope(home.url) as session:
        assert session.scalars(select(DagImportError)).all() == []


def test_a_dag_whose_file_breaks_keeps_its_last_version(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    scheduler.run_once()
    before = home.dag_model("etl").version_hash
    (home.dags / "dags.py").write_text(DAGS + "\nthis is not python\n")
    scheduler.sync_if_changed(force=True)
    model = home.dag_model("etl")
    assert (model.is_active, model.version_hash) == (True, before)
    run_pk = home.trigger("etl")
    scheduler.run_once()
    assert sorted(e.task_id for e in published.take()) == ["extract", "side"]
    assert home.run_state(run_pk) == DagRunState.RUNNING


def test_an_old_fence_never_heartbeats_a_new_try(home: Home) -> None:
    home.sync()
    run_pk = home.trigger("single")
    [enqueue] = home.schedule(run_pk)
    current = claim(home, enqueue)
    forged = Fence(current.fence.ti_id, current.fence.try_number, "not-the-claim")
    with pytest.raises(TryFenced), session_scope(home.url) as session:
        write_xcom(session, forged, TIKey("single", current.ti.run_id, "once"), "k", "1")


def test_a_loop_reports_its_duration_and_the_zombies_it_gave_up(
    home: Home, scheduler: Scheduler, published: Published
) -> None:
    from state.core import metrics

    home.sync()
    run_pk = home.trigger("single")
    scheduler.run_once()
    [enqueue] = published.take()
    claim(home, enqueue)
    backdate(home, enqueue.ti_id, last_heartbeat=long_ago(home.settings.zombie_threshold_seconds))
    metrics.RECORDER.take()

    scheduler._loop_once()  # gives the zombie up
    scheduler._loop_once()  # settles the run, failed

    counted = metrics.RECORDER.take()
    assert home.run_state(run_pk) == DagRunState.FAILED
    assert counted.counters[("zombies_killed", "")] == 1
    assert counted.counters[("ti_finish", '{"state": "failed"}')] == 1
    assert sum(counted.buckets[("scheduler_loop_duration_seconds", "")]) == 2
    assert sum(counted.buckets[("dagrun_duration_seconds", '{"state": "failed"}')]) == 1
