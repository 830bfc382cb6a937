"""Which of a run's tries waiting in ``scheduled`` a pass queues: by weight, within every limit.

A pass (``state.engine.scheduling``) hands the room it counted (``state.engine.pools.Room``) to
the waiting tries in the order Airflow gives them: higher ``priority_weight`` first (the task's
total weight, stored on the task instance), then the order they were made in. Each try takes its
``pool_slots``; a task with ``max_active_tis_per_dag`` or ``max_active_tis_per_dagrun`` takes
no more than its cap leaves. A try that does not fit is passed over, and the ones after it may
still fit (a smaller one, another pool), as in Airflow: the room is not kept for it.

A pass a supervisor makes after its try's end defers to the tries of other runs waiting with a
higher weight in the same pool (``defer``); the scheduler's loop does not, and passes over the
runs with the highest waiting weight first (``scheduler.run_watch``): it is the arbiter.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from state.core import ACTIVE, TI_TABLE, DagStructure, TaskInstanceState, TaskSpec
from state.engine.pools import room_to_queue

log = logging.getLogger(__name__)
TI = TaskInstanceState
_TI = TI_TABLE
# A DAG's task instances queued or running, per task of those capped: what a cap counts.
_ACTIVE_PER_TASK = (
    select(_TI.c.task_id, func.count())
    .where(
        _TI.c.dag_id == bindparam("dag_id"),
        _TI.c.task_id.in_(bindparam("task_ids", expanding=True)),
        _TI.c.state.in_(sorted(ACTIVE)),
    )
    .group_by(_TI.c.task_id)
)


@dataclass
class TaskCaps:
    """How many more instances of each capped task may start: in the DAG, and in this run."""

    in_dag: dict[str, int]
    in_run: dict[str, int]

    def allows(self, task_id: str) -> bool:
        return self.in_dag.get(task_id, 1) > 0 and self.in_run.get(task_id, 1) > 0

    def took(self, task_id: str) -> None:
        for left in (self.in_dag, self.in_run):
            if task_id in left:
                left[task_id] -= 1


def choose_ready(
    session: Session,
    run: tuple[str, str],
    structure: DagStructure,
    rows: Iterable[Any],
    states: Mapping[int, TaskInstanceState],
    defer: bool = False,
) -> list[int]:
    """The ids of the run's ``scheduled`` tries (``rows``, as ``states`` now says) that may be
    queued now, in the order they take their slots."""
    rows = list(rows)
    waiting = sorted(
        (row for row in rows if states[row.id] == TI.SCHEDULED),
        key=lambda row: (-row.priority_weight, row.id),
    )
    if not waiting:
        return []
    # The cap is the DAG's over all of its runs (as in Airflow), and each pool's over all DAGs.
    pools = {row.pool for row in waiting}
    room = room_to_queue(session, run, structure.max_active_tasks, pools, defer)
    if not room.any():
        return []
    caps = _task_caps(session, run[0], structure, rows, states)
    ready = []
    for row in waiting:
        if caps.allows(row.task_id) and room.take(row.pool, row.pool_slots, row.priority_weight):
            caps.took(row.task_id)
            ready.append(row.id)
    _warn_too_large(run, room.pools, waiting)
    return ready


def _task_caps(
    session: Session,
    dag_id: str,
    structure: DagStructure,
    rows: list[Any],
    states: Mapping[int, TaskInstanceState],
) -> TaskCaps:
    """What each capped task of the run's waiting tries leaves; counted under the DAG's lock
    (``room_to_queue`` took it), so two passes of the DAG's runs never both take the last one."""
    specs = {row.task_id: structure.tasks.get(row.task_id) for row in rows}
    capped: dict[str, TaskSpec] = {t: s for t, s in specs.items() if s is not None and s.capped}
    in_run: dict[str, int] = {}
    active_here = Counter(row.task_id for row in rows if states[row.id] in ACTIVE)
    for task_id, spec in capped.items():
        if spec.max_active_tis_per_dagrun is not None:
            in_run[task_id] = spec.max_active_tis_per_dagrun - active_here[task_id]
    per_dag = [t for t, spec in capped.items() if spec.max_active_tis_per_dag is not None]
    if not per_dag:
        return TaskCaps({}, in_run)
    params = {"dag_id": dag_id, "task_ids": per_dag}
    active: dict[str, int] = {
        task_id: n for task_id, n in session.execute(_ACTIVE_PER_TASK, params)
    }
    in_dag = {t: (capped[t].max_active_tis_per_dag or 0) - active.get(t, 0) for t in per_dag}
    return TaskCaps(in_dag, in_run)


#: The tries already said to be too large, so the loop's passes say it once per process.
_TOO_LARGE: set[int] = set()


def _warn_too_large(
    run: tuple[str, str], pools: Mapping[str, tuple[int, int]], waiting: list[Any]
) -> None:
    """Say which tries cannot run: they take more slots than their pool has. Airflow leaves them
    waiting and says so; raising the pool's slots lets them run. They never hold a slot back
    from another try (``state.core.limits.waiting_elsewhere``)."""
    for row in waiting:
        size = pools.get(row.pool, (0, 0))[1]
        if row.pool_slots > size and row.id not in _TOO_LARGE:
            _TOO_LARGE.add(row.id)
            log.warning(
                "task %s of %s/%s takes %d slots of pool %r, which has %d: it waits until the "
                "pool has that many (tradewind pools set %s %d)",
                row.task_id, *run, row.pool_slots, row.pool, size, row.pool, row.pool_slots,
            )  # fmt: skip
