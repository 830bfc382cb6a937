"""Task instances of mapped tasks, made once their input is known.

A mapped task starts like any other: one task instance at map index -1 (``create_run``). When
readiness decides to schedule it, its upstream XComs exist, so ``expand_mapped`` can count its
items and give it the task instances it needs:
- ``.expand``: one per item (the cross product of its mapped arguments);
- ``.batch(size=k).iterate``: ``min(k, items)``, items dealt round-robin by the worker;
- ``.iterate`` alone needs nothing here: its one task instance runs every item.

The placeholder at -1 becomes map index 0 and is scheduled; 1..n-1 are added as ``none`` and
scheduled on the next pass (the scheduler loop, or the supervisor of the next try to end). With
no item at all the placeholder is skipped (so are its downstream tasks under ``all_success``, as
in Airflow). A task cleared after it was expanded is counted again: indexes past the new count
are ``removed``, missing ones are added or restored. The statements are a constant few per mapped
task that becomes ready, and none at all on a pass that schedules no mapped task.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from state.core import (
    DagStructure,
    MappedSource,
    TaskInstance,
    TaskInstanceState,
    TaskSpec,
    XCom,
    transition_tis,
)
from state.engine.readiness import Decisions

TI = TaskInstanceState
_NOT_STARTED = frozenset({TI.NONE, TI.REMOVED})


def expand_mapped(
    session: Session, structure: DagStructure, rows: Iterable[Any], decisions: Decisions
) -> None:
    """Give each mapped task about to be scheduled its task instances; updates ``decisions``."""
    tasks = structure.tasks
    ready = set(decisions.schedule)
    rows = list(rows)
    # Not started at all: the placeholder, or every map index after a clear. A task already
    # expanded whose later map indexes are being scheduled needs nothing (and costs no query).
    started = {row.task_id for row in rows if TI(row.state) not in _NOT_STARTED}
    candidates = {
        row.task_id
        for row in rows
        if row.id in ready and row.task_id not in started and _expands(tasks.get(row.task_id))
    }
    for task_id in sorted(candidates):
        siblings = _siblings(session, decisions, task_id)
        if siblings:
            count = count_task_instances(session, siblings[0], tasks)
            _reconcile(session, siblings, count, tasks[task_id], decisions)


def _expands(spec: TaskSpec | None) -> bool:
    return spec is not None and spec.mapping is not None and spec.mapping.expands


def _siblings(session: Session, decisions: Decisions, task_id: str) -> list[TaskInstance]:
    """Every task instance of ``task_id`` in the run of the ready ones, by map index."""
    one = session.scalars(
        select(TaskInstance).where(
            TaskInstance.id.in_(decisions.schedule), TaskInstance.task_id == task_id
        )
    ).first()
    if one is None:
        return []
    query = select(TaskInstance).where(
        TaskInstance.dag_id == one.dag_id,
        TaskInstance.run_id == one.run_id,
        TaskInstance.task_id == task_id,
    )
    return sorted(session.scalars(query), key=lambda ti: ti.map_index)


def count_task_instances(session: Session, ti: TaskInstance, tasks: Mapping[str, TaskSpec]) -> int:
    """How many task instances the mapped task of ``ti`` needs now: one read of the XComs."""
    mapping = tasks[ti.task_id].mapping
    assert mapping is not None  # only mapped tasks are counted
    sources = mapping.sources
    upstream = {task_id for source in sources.values() for task_id in _task_ids(source)}
    xcoms = _read_xcoms(session, ti.dag_id, ti.run_id, upstream)
    lengths = [_source_length(source, xcoms, tasks) for source in sources.values()]
    items = math.prod(lengths)
    if mapping.kind == "expand" or mapping.batch_size is None:
        return items
    return min(mapping.batch_size, items)


def _task_ids(source: MappedSource) -> list[str]:
    """The upstream tasks a mapped argument's items come from (a zip's parts' too)."""
    own = [source.task_id] if source.task_id is not None else []
    return own + [task_id for part in source.zip for task_id in _task_ids(part)]


def _read_xcoms(
    session: Session, dag_id: str, run_id: str, task_ids: set[str]
) -> dict[tuple[str, str], list[Any]]:
    """The XComs of ``task_ids`` in the run: (task, key) -> values in map-index order."""
    if not task_ids:
        return {}
    query = (
        select(XCom.task_id, XCom.key, XCom.value)
        .where(XCom.dag_id == dag_id, XCom.run_id == run_id, XCom.task_id.in_(task_ids))
        .order_by(XCom.map_index)
    )
    found: dict[tuple[str, str], list[Any]] = {}
    for row in session.execute(query):
        found.setdefault((row.task_id, row.key), []).append(json.loads(row.value))
    return found


def _source_length(
    source: MappedSource,
    xcoms: Mapping[tuple[str, str], list[Any]],
    tasks: Mapping[str, TaskSpec],
) -> int:
    """The number of items one mapped argument gives, as the worker will see its value."""
    if source.zip:
        lengths = [_source_length(part, xcoms, tasks) for part in source.zip]
        return max(lengths) if source.zip_longest else min(lengths)
    if source.length is not None or source.task_id is None:
        return source.length or 0
    values = xcoms.get((source.task_id, source.key), [])
    upstream_spec = tasks.get(source.task_id)
    upstream = upstream_spec.mapping if upstream_spec else None
    if upstream is not None and upstream.kind == "expand":
        return len(values)  # the list of every map index's result
    if upstream is not None and upstream.batch_size:
        return sum(len(value) for value in values if isinstance(value, list))  # merged batches
    # One task instance, one value: a list or a dict maps; nothing else does (the worker refuses
    # to push one for a task mapped over), and a missing value maps to no item.
    value = values[0] if values else None
    return len(value) if isinstance(value, list | dict) else 0


def _reconcile(
    session: Session,
    siblings: Sequence[TaskInstance],
    count: int,
    spec: TaskSpec,
    decisions: Decisions,
) -> None:
    by_index = {ti.map_index: ti for ti in siblings}
    placeholder = by_index.pop(-1, None)
    # Removed map indexes were not cleared with the others: they come back in this generation.
    generation = max(ti.generation for ti in siblings)
    sibling_ids = {ti.id for ti in siblings}
    decisions.schedule[:] = [ti_id for ti_id in decisions.schedule if ti_id not in sibling_ids]
    if count == 0:
        kept = placeholder or siblings[0]
        _skip_all(session, kept, by_index.values(), decisions, generation)
        return
    if placeholder is not None and 0 not in by_index:
        _renumber(session, placeholder, 0)
        by_index[0] = placeholder
    extra = [ti.id for index, ti in by_index.items() if index >= count and ti.state == TI.NONE]
    transition_tis(session, extra, [TI.NONE], TI.REMOVED)
    back = [ti.id for index, ti in by_index.items() if index < count and ti.state == TI.REMOVED]
    transition_tis(session, back, [TI.REMOVED], TI.NONE, {"generation": generation})
    # New task instances wait for the next pass: this one has planned its queueing already.
    missing = [i for i in range(count) if i not in by_index]
    _add(session, siblings[0], spec, missing, generation)
    decisions.schedule += [ti.id for index, ti in by_index.items() if index < count]


def _skip_all(
    session: Session,
    kept: TaskInstance,
    others: Iterable[TaskInstance],
    decisions: Decisions,
    generation: int,
) -> None:
    """No item: one task instance is skipped (its downstream decides on it), the rest removed."""
    rest = [ti.id for ti in others if ti.id != kept.id and ti.state == TI.NONE]
    transition_tis(session, rest, [TI.NONE], TI.REMOVED)
    if kept.state == TI.REMOVED:
        transition_tis(session, [kept.id], [TI.REMOVED], TI.NONE, {"generation": generation})
    decisions.skip.append(kept.id)


def _renumber(session: Session, ti: TaskInstance, map_index: int) -> None:
    session.execute(
        update(TaskInstance)
        .where(TaskInstance.id == ti.id, TaskInstance.map_index == -1)
        .values(map_index=map_index)
        .execution_options(synchronize_session=False)
    )
    set_committed_value(ti, "map_index", map_index)


def _add(
    session: Session,
    like: TaskInstance,
    spec: TaskSpec,
    indexes: list[int],
    generation: int,
) -> None:
    """New ``none`` task instances at ``indexes``, in the run of ``like``."""
    added = [
        TaskInstance(
            dag_id=like.dag_id,
            run_id=like.run_id,
            task_id=like.task_id,
            map_index=index,
            state=TI.NONE,
            try_number=0,
            max_tries=spec.max_tries,
            generation=generation,
            queue=spec.queue,
            pool=spec.pool,
            priority_weight=spec.priority_weight,
            pool_slots=spec.pool_slots,
        )
        for index in indexes
    ]
    session.add_all(added)
