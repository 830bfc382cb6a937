"""An iterable task's items are counted by status as their checkpoints are written (real
supervisor, real task process): the ``tradewind_iterable_items_total`` of /metrics."""

from __future__ import annotations

from pathlib import Path

from state.core import metrics
from state.core.enums import DagRunState
from tests.worker.iterable_support import Stack, add_iterate_dag


def test_items_are_counted_by_status_as_they_are_checkpointed(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    add_iterate_dag(stack, fail={7})
    run_pk = stack.trigger("iterate_dag")
    stack.schedule(run_pk)
    metrics.RECORDER.take()

    stack.execute_queued(stop_after=("square", 1))  # 19 items succeed, item 7 fails
    first = metrics.RECORDER.take().counters
    assert stack.run_to_end(run_pk) == DagRunState.SUCCESS  # the retry runs item 7 alone
    retry = metrics.RECORDER.take().counters

    assert first[("iterable_items", '{"status": "success"}')] == 19
    assert first[("iterable_items", '{"status": "failed"}')] == 1
    assert retry[("iterable_items", '{"status": "success"}')] == 1
