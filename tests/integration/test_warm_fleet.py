"""Warm task processes in a real fleet: a Celery worker with TRADEWIND_TASK_PROCESS_REUSE set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WARM_DAGS = Path(__file__).parent / "warm_dags"


def test_a_worker_runs_n_tries_in_each_task_process(make_fleet) -> None:
    fleet = make_fleet(WARM_DAGS, TRADEWIND_TASK_PROCESS_REUSE="3")
    fleet.start_worker(concurrency=1)  # one pool process: the tries of the chain in turn
    fleet.start_scheduler()
    fleet.trigger("warm_chain", "r1")

    assert fleet.wait_run("warm_chain", "r1") == "success"
    seen = [json.loads(fleet.xcom("warm_chain", "r1", f"t{n}") or "null") for n in range(6)]
    pids = [pid for pid, _ in seen]
    # Three tries per task process, its module state kept from one to the next.
    assert pids[0] == pids[1] == pids[2] != pids[3] == pids[4] == pids[5]
    assert [calls for _, calls in seen] == [1, 2, 3, 1, 2, 3]
