"""Item-level progress of iterable task instances, computed from their checkpoints.

``items_progress(session, ti_keys)`` answers for any number of task instances in two queries,
whatever their number of items: one for the task instances (items total, generation), one for
their checkpoint rows. While a task instance runs, its batches say how far it got (up to one
round behind: outcomes are written a round at a time); after a success the batches are gone and
the completion marker's counts remain.

The values are the ones ``worker/task_runner/checkpoints.py`` writes: a batch is
``{"generation": g, "outcomes": [{"i": index, "s": status, ...}]}``, the marker
``{"generation": g, "total": n, "succeeded": ..., "failed": ..., "skipped": ...}``;
tests/state/test_progress.py writes them with the worker's own classes. A batch kept in object
storage (``state/core/objects.py``) is read from what its row keeps of it: ``batch_progress``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session

from state.core import STATE_OBJECT_KEY, TaskInstance, TaskSpec, TaskStateValue
from state.records import CHECKPOINT_PREFIX, MARKER_KEY, TIKey, batch_number


@dataclass(frozen=True)
class ItemsProgress:
    """Items of one iterable task instance: finished by kind, and how many there are."""

    done: int = 0
    failed: int = 0
    skipped: int = 0
    total: int | None = None  # None until the task instance's first try has counted its items

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.skipped


def iterable_task_ids(tasks: Mapping[str, TaskSpec]) -> list[str]:
    """The tasks of a DAG structure that iterate their items (``.iterate``, ``.batch().iterate``):
    only their task instances have items to count."""
    return [
        task_id
        for task_id, spec in tasks.items()
        if spec.mapping is not None and spec.mapping.kind == "iterate"
    ]


def items_of_run(
    session: Session,
    dag_id: str,
    run_id: str,
    tis: Iterable[tuple[str, int]],
    tasks: Mapping[str, TaskSpec],
) -> dict[TIKey, ItemsProgress]:
    """The item progress of the iterable ones among a run's task instances (``tis``: task id,
    map index; ``tasks``: the DAG structure's), in two queries whatever their number of items.
    """
    iterable = set(iterable_task_ids(tasks))
    keys = [
        TIKey(dag_id, run_id, task_id, map_index)
        for task_id, map_index in tis
        if task_id in iterable
    ]
    return items_progress(session, keys)


def items_progress(session: Session, ti_keys: Sequence[TIKey]) -> dict[TIKey, ItemsProgress]:
    """Progress of each task instance in ``ti_keys`` (two queries in all)."""
    if not ti_keys:
        return {}
    tis = _task_instances(session, ti_keys)
    rows: dict[TIKey, dict[str, str]] = defaultdict(dict)
    query = select(
        TaskStateValue.dag_id,
        TaskStateValue.run_id,
        TaskStateValue.task_id,
        TaskStateValue.map_index,
        TaskStateValue.key,
        TaskStateValue.value,
    ).where(
        _any_of(TaskStateValue, ti_keys),
        TaskStateValue.key.startswith(CHECKPOINT_PREFIX, autoescape=True),
    )
    for row in session.execute(query):
        rows[TIKey(row.dag_id, row.run_id, row.task_id, row.map_index)][row.key] = row.value
    return {key: _progress(rows.get(key, {}), *tis.get(key, (None, 0))) for key in ti_keys}


def _any_of(table: Any, keys: Iterable[TIKey]) -> ColumnElement[bool]:
    return or_(
        *(
            and_(
                table.dag_id == key.dag_id,
                table.run_id == key.run_id,
                table.task_id == key.task_id,
                table.map_index == key.map_index,
            )
            for key in keys
        )
    )


def _task_instances(session: Session, keys: Sequence[TIKey]) -> dict[TIKey, tuple[int | None, int]]:
    query = select(
        TaskInstance.dag_id,
        TaskInstance.run_id,
        TaskInstance.task_id,
        TaskInstance.map_index,
        TaskInstance.items_total,
        TaskInstance.generation,
    ).where(_any_of(TaskInstance, keys))
    return {
        TIKey(row.dag_id, row.run_id, row.task_id, row.map_index): (row.items_total, row.generation)
        for row in session.execute(query)
    }


def _progress(rows: dict[str, str], total: int | None, generation: int) -> ItemsProgress:
    statuses = _latest_statuses(rows, generation)
    if statuses:
        counts = Counter(statuses.values())
        return ItemsProgress(counts["success"], counts["failed"], counts["skipped"], total)
    marker = json.loads(rows[MARKER_KEY]) if MARKER_KEY in rows else None
    if isinstance(marker, dict) and marker.get("generation") == generation:
        return ItemsProgress(
            int(marker.get("succeeded", 0)),
            int(marker.get("failed", 0)),
            int(marker.get("skipped", 0)),
            int(marker.get("total", total or 0)),
        )
    return ItemsProgress(total=total)


def _latest_statuses(rows: dict[str, str], generation: int) -> dict[int, str]:
    """Index -> latest status, over the batches of ``generation`` up to the first gap."""
    batches = {batch_number(key): text for key, text in rows.items()}
    statuses: dict[int, str] = {}
    number = 0
    while number in batches:
        value = json.loads(batches[number])
        if isinstance(value, dict) and STATE_OBJECT_KEY in value:
            value = value.get(PROGRESS_KEY)  # the batch is in object storage
        if not isinstance(value, dict) or value.get("generation") != generation:
            break
        for entry in value.get("outcomes", []):
            statuses[entry["i"]] = entry["s"]
        number += 1
    return statuses


#: Where the row of a batch kept in object storage holds what progress reads of it.
PROGRESS_KEY = "progress"


def batch_progress(value: Any) -> dict[str, Any] | None:
    """What progress reads of a batch: its generation, and each entry's index and status.

    The supervisor keeps it in the row of a batch it stores in object storage, so that progress
    stays two queries, with no object read.
    """
    if not isinstance(value, dict) or not isinstance(value.get("outcomes"), list):
        return None
    entries = [
        {"i": entry["i"], "s": entry["s"]}
        for entry in value["outcomes"]
        if isinstance(entry, dict) and "i" in entry and "s" in entry
    ]
    return {"generation": value.get("generation"), "outcomes": entries}
