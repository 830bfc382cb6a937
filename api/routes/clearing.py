"""Which task instances a clear resets: shared by a run's clear and ``clearTaskInstances``."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from state.core import DagRun, TaskInstanceState
from state.views import task_ids_in_states

FAILED = (TaskInstanceState.FAILED, TaskInstanceState.UPSTREAM_FAILED)


def tasks_to_clear(
    session: Session, run: DagRun, only_states: Sequence[TaskInstanceState] | None
) -> list[str] | None:
    """The task ids to clear in ``run``: None means all; ``[]`` means none."""
    if only_states is None:
        return None
    return task_ids_in_states(session, run, only_states)
