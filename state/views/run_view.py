"""What the UI's run and task pages read: aggregates per task, and an iterable task's items.

Every function here costs a fixed number of statements whatever the run's size: a run of 2,000
mapped task instances is one ``GROUP BY`` row per task and state, and an iterable task's 16,194
items are read from its checkpoint rows in one statement and paged in memory (the rows hold a
round of outcomes each, so their number is the number of rounds, not of items).
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from state.core import (
    ACTIVE,
    STATE_OBJECT_KEY,
    Page,
    TaskInstance,
    TaskInstanceState,
    TaskStateValue,
    page_of,
    utcnow,
)
from state.records import BATCH_PREFIX, CHECKPOINT_PREFIX, TIKey, batch_number
from state.views.progress import PROGRESS_KEY, ItemsProgress, items_progress


@dataclass
class TaskSummary:
    """One task of a run: its task instances counted by state, and their span in time."""

    task_id: str
    counts: dict[str, int] = field(default_factory=dict)
    mapped: bool = False
    try_number: int = 0
    start: dt.datetime | None = None
    end: dt.datetime | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def state(self) -> str:
        """The one state of an unmapped task; for a mapped one, the most pressing of its states."""
        for state in _PRESSING:
            if self.counts.get(state):
                return state
        return next(iter(self.counts), TaskInstanceState.NONE)


_PRESSING = (
    TaskInstanceState.RUNNING,
    TaskInstanceState.QUEUED,
    TaskInstanceState.UP_FOR_RETRY,
    TaskInstanceState.FAILED,
    TaskInstanceState.UPSTREAM_FAILED,
    TaskInstanceState.SCHEDULED,
    TaskInstanceState.NONE,
    TaskInstanceState.SUCCESS,
    TaskInstanceState.SKIPPED,
    TaskInstanceState.REMOVED,
)


def task_summaries(
    session: Session, dag_id: str, run_id: str, task_ids: Sequence[str] = ()
) -> dict[str, TaskSummary]:
    """Each task of the run (or of ``task_ids``) summed over its task instances: one statement."""
    query = select(
        TaskInstance.task_id,
        TaskInstance.state,
        func.count(),
        func.max(TaskInstance.map_index),
        func.max(TaskInstance.try_number),
        func.min(TaskInstance.start_date),
        func.max(TaskInstance.end_date),
    ).where(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)
    if task_ids:
        query = query.where(TaskInstance.task_id.in_(list(task_ids)))
    summaries: dict[str, TaskSummary] = {}
    grouped = query.group_by(TaskInstance.task_id, TaskInstance.state)
    for task_id, state, count, top_index, tries, start, end in session.execute(grouped):
        summary = summaries.setdefault(task_id, TaskSummary(task_id))
        summary.counts[str(state)] = count
        summary.mapped = summary.mapped or top_index >= 0
        summary.try_number = max(summary.try_number, tries or 0)
        summary.start = min(filter(None, (summary.start, start)), default=None)
        summary.end = max(filter(None, (summary.end, end)), default=None)
    for summary in summaries.values():
        if any(summary.counts.get(state) for state in ACTIVE):
            summary.end = None  # still going: its duration counts up to now
    return summaries


def run_ti_counts(session: Session, dag_id: str, run_id: str) -> dict[str, int]:
    """The run's task instances counted by state: one aggregate answering a row a state (the
    run page's counts; the rows it shows are read a page at a time)."""
    query = (
        select(TaskInstance.state, func.count())
        .where(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)
        .group_by(TaskInstance.state)
    )
    return {str(state): count for state, count in session.execute(query)}


def tasks_in_state(
    session: Session, dag_id: str, run_id: str, state: str, offset: int, limit: int
) -> tuple[list[str], int]:
    """A page of the run's tasks with a task instance in ``state``, by task id, and how many
    tasks have one (two statements; the page is cut by the database)."""
    where = (
        TaskInstance.dag_id == dag_id,
        TaskInstance.run_id == run_id,
        TaskInstance.state == state,
    )
    page = (
        select(TaskInstance.task_id)
        .where(*where)
        .group_by(TaskInstance.task_id)
        .order_by(TaskInstance.task_id)
        .offset(offset)
        .limit(limit)
    )
    total = select(func.count(func.distinct(TaskInstance.task_id))).where(*where)
    return list(session.scalars(page)), int(session.scalar(total) or 0)


def active_in_dag(session: Session, dag_id: str) -> int:
    """Task instances of the DAG queued or running now, across its runs (max_active_tasks)."""
    query = select(func.count()).where(
        TaskInstance.dag_id == dag_id, TaskInstance.state.in_([str(s) for s in ACTIVE])
    )
    return int(session.scalar(query) or 0)


@dataclass(frozen=True)
class ItemOutcome:
    """How one item of an iterable task instance ended in its current generation."""

    index: int
    status: str
    error: str | None = None


@dataclass(frozen=True)
class ItemsView:
    """An iterable task instance's finished items: counted, one page of them, the failed ones."""

    counts: Counter[str]
    finished: int
    page: list[ItemOutcome]
    failed: list[ItemOutcome]


def items_view(session: Session, key: TIKey, generation: int, offset: int, size: int) -> ItemsView:
    """The finished items of the task instance's current generation (one or two statements).

    Objects are made only for the page and the first ``size`` failed items: 16,194 items cost
    one JSON parse of their checkpoint rows. A batch kept in object storage keeps only indexes
    and statuses in its row: its errors are not read here (the log has them).
    """
    outcomes = _latest_outcomes(session, key, generation)
    counts = Counter(status for status, _ in outcomes.values())
    indexes = sorted(outcomes)
    failed = (index for index in indexes if outcomes[index][0] == "failed")
    return ItemsView(
        counts,
        len(indexes),
        [ItemOutcome(i, *outcomes[i]) for i in indexes[offset : offset + size]],
        [ItemOutcome(i, *outcomes[i]) for i in islice(failed, size)],
    )


Outcomes = dict[int, tuple[str, str | None]]
#: Parsed outcomes by task instance and generation, with the stamp of the rows they came from.
_PARSED: OrderedDict[tuple[TIKey, int], tuple[tuple[Any, ...], Outcomes]] = OrderedDict()
_MAX_PARSED = 16


def _latest_outcomes(session: Session, key: TIKey, generation: int) -> Outcomes:
    """Index -> (status, error) of the generation's finished items, parsed once per change.

    One statement stamps the checkpoint rows (how many, the latest write, their size); while
    the stamp holds, the outcomes parsed before are used, so a page polled while nothing
    changes does not parse 16,194 outcomes again. A changed stamp reads the rows (one more).
    """
    where = (
        TaskStateValue.dag_id == key.dag_id,
        TaskStateValue.run_id == key.run_id,
        TaskStateValue.task_id == key.task_id,
        TaskStateValue.map_index == key.map_index,
        TaskStateValue.key.startswith(BATCH_PREFIX, autoescape=True),
    )
    stamp_query = select(
        func.count(),
        func.max(TaskStateValue.updated_at),
        func.sum(func.length(TaskStateValue.value)),
    ).where(*where)
    stamp = tuple(session.execute(stamp_query).one())
    cached = _PARSED.get((key, generation))
    if cached is not None and cached[0] == stamp:
        _PARSED.move_to_end((key, generation))
        return cached[1]
    rows = session.execute(select(TaskStateValue.key, TaskStateValue.value).where(*where))
    outcomes = _parse_rounds({batch_number(row_key): text for row_key, text in rows}, generation)
    _PARSED[(key, generation)] = (stamp, outcomes)
    while len(_PARSED) > _MAX_PARSED:
        _PARSED.popitem(last=False)
    return outcomes


def _parse_rounds(batches: dict[int | None, str], generation: int) -> Outcomes:
    outcomes: Outcomes = {}
    number = 0
    while number in batches:
        value = json.loads(batches[number])
        if isinstance(value, dict) and STATE_OBJECT_KEY in value:
            value = value.get(PROGRESS_KEY)
        if not isinstance(value, dict) or value.get("generation") != generation:
            break
        for entry in value.get("outcomes", []):
            outcomes[entry["i"]] = (entry["s"], entry.get("e"))
        number += 1
    return outcomes


def task_state_values(session: Session, key: TIKey, page: Page) -> tuple[list[TaskStateValue], int]:
    """A page of the task instance's live state-store keys, its item checkpoints left out
    (they are the items' outcomes, which the page shows as items); two statements."""
    now = utcnow()
    query = select(TaskStateValue).where(
        TaskStateValue.dag_id == key.dag_id,
        TaskStateValue.run_id == key.run_id,
        TaskStateValue.task_id == key.task_id,
        TaskStateValue.map_index == key.map_index,
        or_(TaskStateValue.expires_at.is_(None), TaskStateValue.expires_at > now),
        ~TaskStateValue.key.startswith(CHECKPOINT_PREFIX, autoescape=True),
    )
    rows, total = page_of(session, query, page, {"key": TaskStateValue.key}, ["key"])
    return [row[0] for row in rows], total


def items_counts(session: Session, keys: Sequence[TIKey]) -> dict[TIKey, ItemsProgress]:
    """Item progress of iterable task instances, from the outcomes parsed once per change.

    One statement for the task instances, one stamp per task instance (its rows read again only
    when they changed), and ``items_progress`` for those whose outcomes were folded into their
    completion marker. The number of iterable tasks is the DAG's, not the run's.
    """
    if not keys:
        return {}
    query = select(
        TaskInstance.task_id, TaskInstance.map_index, TaskInstance.generation,
        TaskInstance.items_total,
    ).where(
        TaskInstance.dag_id == keys[0].dag_id,
        TaskInstance.run_id == keys[0].run_id,
        TaskInstance.task_id.in_([key.task_id for key in keys]),
        TaskInstance.map_index == -1,
    )  # fmt: skip
    found: dict[TIKey, ItemsProgress] = {}
    for task_id, map_index, generation, total in session.execute(query):
        key = TIKey(keys[0].dag_id, keys[0].run_id, task_id, map_index)
        counts = Counter(
            status for status, _ in _latest_outcomes(session, key, generation).values()
        )
        if counts:
            found[key] = ItemsProgress(
                counts["success"], counts["failed"], counts["skipped"], total
            )
    folded = [key for key in keys if key not in found]
    return found | items_progress(session, folded)
