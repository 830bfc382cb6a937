"""A DAG file that hangs at import holds up the scheduler's sync only, never its scheduling:
``run_forever`` syncs on a thread of its own (PostgreSQL, a real child process hanging)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import select

from scheduler import loop
from scheduler.loop import Scheduler
from state.core.db import session_scope
from state.core.models import TaskInstance
from tests.scheduler.conftest import create_schema, new_run, store_dag, wide
from tradewind.settings import Settings

pytestmark = pytest.mark.integration
PG_DATABASE_PREFIX = "tw_sync_apart_"
#: The hanging file's import is killed after this: the run must be queued well before.
HANG_SECONDS = 90.0


def test_runs_are_scheduled_while_a_file_hangs_in_the_sync(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_schema(pg_url)
    with session_scope(pg_url) as session:
        store_dag(session, "fan", wide(3))
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "hangs.py").write_text("import time\ntime.sleep(10**6)\n")
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    settings = Settings(
        database_url=pg_url,
        dags_folder=dags,
        dag_file_processor_timeout=HANG_SECONDS,
        scheduler_interval_seconds=0.2,
    )
    scheduler = Scheduler(settings, app=object())  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run_forever, args=(stop,))
    thread.start()
    try:
        with session_scope(pg_url) as session:
            new_run(session, "fan", "r1")

        def queued() -> int:
            with session_scope(pg_url) as session:
                states = session.scalars(select(TaskInstance.state).filter_by(run_id="r1"))
                return sum(state == "queued" for state in states)

        waited = 0
        while queued() < 3 and waited < HANG_SECONDS * 5 / 2:
            stop.wait(0.2)
            waited += 1
        assert queued() == 3
        assert scheduler._files_seen == {}  # the sync has not ended: the file still hangs
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
