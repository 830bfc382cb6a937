"""A task that kills its Celery pool process every try is failed after ``max_deliveries``.

On ``--pool prefork`` (on the threads pool the supervisor is the worker itself: killing it is a
worker lost, ``tests/integration/test_fleet.py``). With ``task_reject_on_worker_lost`` Celery
gives the message back each time its pool process dies, and the claim drops the copy of a try
that is still ``running``; the zombie rule ends that try and the next one starts. Each delivery
is counted in SQL, across tries, until a supervisor records the end of one: a task that never
lets its supervisor get that far is failed once the count passes ``max_deliveries`` (3), here at
the redelivery of its second try, instead of killing a worker six times (retries=5).

Celery notices a pool process's death at once, or at its next pool check (every 5 s) when it saw
the process's exit before the process could be reaped: the zombie threshold (8 s) is longer, so
the redelivery always comes before the zombie rule.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PG_DATABASE_PREFIX = "tw_worker_lost_"
DAGS = Path(__file__).parent / "scheduler_dags"


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet], tmp_path: Path) -> Fleet:
    return make_fleet(
        DAGS,
        TRADEWIND_ZOMBIE_THRESHOLD_SECONDS="8",
        SCHEDULER_TEST_RECORD=str(tmp_path / "tries.txt"),
    )


def test_a_task_that_keeps_killing_its_worker_is_failed_after_max_deliveries(
    fleet: Fleet,
) -> None:
    fleet.start_worker("w1", concurrency=1, pool="prefork")
    fleet.start_scheduler()
    fleet.trigger("worker_killer", "r1")

    assert fleet.wait_run("worker_killer", "r1", timeout=90) == "failed"
    ti = fleet.task_instances("worker_killer", "r1")["kill_my_worker"]
    assert (ti.state, ti.try_number, ti.deliveries) == ("failed", 2, 4)
    assert ti.error is not None
    assert ti.error.startswith("delivered 4 times without a try ending (max_deliveries=3)")
    tries = Path(fleet.env["SCHEDULER_TEST_RECORD"]).read_text().split()
    assert tries == ["1", "2"]  # each try ran once; the redelivered copies ran nothing
    log = fleet.log("w1")
    assert log.count("WorkerLostError") >= 2  # Celery saw its pool process die each time
