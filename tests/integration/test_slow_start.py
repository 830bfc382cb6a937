"""A try slower to start than the zombie threshold keeps its first try.

Its DAG file takes longer to import in the worker than the zombie threshold (4 s here): until
its supervisor's loop runs, ``worker/supervisor/start_beats.py`` heartbeats for it, so the scheduler
does not fail it as a zombie while it is still being set up.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Fleet

HEAVY_DAG = """
import sys
import time

from tradewind import dag, task

if "worker" in sys.argv:  # the Celery worker's import only: the scheduler's parse stays quick
    time.sleep(6)


@task(retries=0)
def only():
    return 1


@dag(schedule=None)
def heavy_import():
    only()


heavy_import()
"""


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_dag_file_slower_to_import_than_the_zombie_threshold_costs_no_try(
    make_fleet: Callable[..., Fleet], tmp_path: Path
) -> None:
    dags = tmp_path / "slow_dags"
    dags.mkdir()
    (dags / "heavy.py").write_text(HEAVY_DAG)
    fleet = make_fleet(dags)
    fleet.start_worker("w1", concurrency=1)
    fleet.start_scheduler()
    fleet.trigger("heavy_import", "r1")

    assert fleet.wait_run("heavy_import", "r1", timeout=60) == "success"
    assert fleet.task_states("heavy_import", "r1") == {"only": ("success", 1)}
    assert "zombie" not in fleet.log("scheduler")
