"""Deleting ended history in batches (``state.records.history``) on SQLite and PostgreSQL:
what ended before the time goes with its rows and objects; nothing newer, nothing running, and
nothing a dry run counted is touched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from state.core.db import get_engine, session_scope
from state.core.models import XCom
from state.engine import Purgers
from state.records import CleanScope, HistoryBatch, clean_next_batch, count_history
from tests.scheduler.conftest import create_schema
from tests.state.history_seed import (
    CUTOFF,
    GONE,
    KEPT,
    object_path,
    rows_of,
    runs_left,
    seed,
    table_counts,
)
from tradewind.settings import Settings
from worker.state_store.purge import state_purger
from worker.xcom.purge import xcom_purger


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    made = (
        request.getfixturevalue("pg_url")
        if request.param == "postgresql"
        else f"sqlite:///{tmp_path}/tradewind.db"
    )
    seed(create_schema(made), tmp_path / "objects")
    yield made
    get_engine(made).dispose()


def object_purgers(url: str, objects: Path) -> Purgers:
    """The real purgers of the object-storage backends, on a local fsspec folder."""
    settings = Settings(
        database_url=url,
        xcom_backend="object_storage",
        state_store_backend="object_storage",
        object_storage_url=f"file://{objects}",
    )
    return Purgers(xcom_purger(settings), state_purger(settings))


def clean_all(url: str, scope: CleanScope, purgers: Purgers, max_rows: int) -> list[HistoryBatch]:
    batches = []
    while (batch := clean_next_batch(url, scope, max_rows, purgers)).rows:
        batches.append(batch)
    return batches


def test_a_clean_deletes_ended_runs_with_their_rows_and_objects_and_nothing_newer(
    url: str, tmp_path: Path
) -> None:
    objects = tmp_path / "objects"
    scope = CleanScope(CUTOFF, ("old",))
    counted = count_history_now(url, scope)

    # Seven rows a batch: each run's rows take several batches, the run row the last one.
    batches = clean_all(url, scope, object_purgers(url, objects), max_rows=7)

    assert len(batches) > len(GONE)
    assert all(batch.rows <= 7 for batch in batches)
    assert runs_left(url) == {(dag_id, run_id) for dag_id, run_id, *_ in KEPT}
    for dag_id, run_id, *_ in GONE:
        assert not object_path(objects, "xcom", dag_id, run_id).exists()
        assert not object_path(objects, "state", dag_id, run_id).exists()
        assert rows_of(url, XCom, dag_id, run_id) == 0
    for dag_id, run_id, *_ in KEPT:
        assert object_path(objects, "xcom", dag_id, run_id).exists()
        assert object_path(objects, "state", dag_id, run_id).exists()
        assert rows_of(url, XCom, dag_id, run_id) == 4
    deleted: dict[str, int] = {}
    for batch in batches:
        for table, count in batch.deleted.items():
            deleted[table] = deleted.get(table, 0) + count
    # What the dry run counted is what went: two runs of three tasks, and one asset event each
    # (the old event a partitioned DAG still waits on stays).
    assert deleted == {k: v for k, v in counted.items() if v}
    assert counted == {
        "dag_run": 2, "xcom": 8, "task_state": 8, "task_instance_history": 0,
        "hitl_detail": 2, "task_instance": 6, "backfill_dag_run": 2, "asset_event": 2,
        "event_log": 0,
    }  # fmt: skip
    assert sorted(run for batch in batches for run in batch.runs) == [("old", "f1"), ("old", "s1")]


def count_history_now(url: str, scope: CleanScope) -> dict[str, int]:
    with session_scope(url) as session:
        return count_history(session, scope)


def test_a_dry_run_changes_nothing(url: str) -> None:
    before = table_counts(url)

    counted = count_history_now(url, CleanScope(CUTOFF))

    assert counted["dag_run"] == 3  # the two of "old" and the one of "other"
    assert table_counts(url) == before


def test_without_dag_ids_every_dag_s_old_runs_go(url: str, tmp_path: Path) -> None:
    clean_all(url, CleanScope(CUTOFF), object_purgers(url, tmp_path / "objects"), 1000)

    assert ("other", "s1") not in runs_left(url)
    assert ("old", "new1") in runs_left(url)


@pytest.mark.integration
def test_a_run_another_transaction_holds_is_left_for_later_without_waiting(
    pg_url: str, tmp_path: Path
) -> None:
    seed(create_schema(pg_url), tmp_path / "objects")
    scope = CleanScope(CUTOFF, ("old",))
    with psycopg.connect(pg_url) as holder:  # a clear, or a scheduler, holding one run's lock
        holder.execute("SELECT id FROM dag_run WHERE run_id = 's1' AND dag_id = 'old' FOR UPDATE")
        clean_all(url=pg_url, scope=scope, purgers=Purgers(), max_rows=1000)
        assert ("old", "s1") in runs_left(pg_url)
        assert ("old", "f1") not in runs_left(pg_url)
    clean_all(url=pg_url, scope=scope, purgers=Purgers(), max_rows=1000)
    assert ("old", "s1") not in runs_left(pg_url)
