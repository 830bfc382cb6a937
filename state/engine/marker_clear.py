"""Clearing through ``ExternalTaskMarker``: a cleared marker clears what it marks, recursively.

A marker task names a task of another DAG and a logical date (a template, rendered with the
marker's run, ``tradewind/standard/external_task.py``). When a clear selects a marker, the run
of the other DAG at that logical date has the marked task and everything downstream of it
cleared too, and a marker among those leads on. As in Airflow, the first marker met sets how
deep the clear may go (its ``recursion_depth``); a clear that would go deeper is refused whole.
Two DAGs that mark each other end on their own: a task already cleared is not cleared again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core import DagModel, DagRun, TaskSpec, structure_of

if TYPE_CHECKING:
    from tradewind.standard.external_task import MarkerTarget


class MarkerDepthExceeded(ValueError):
    """A clear through markers would go deeper than the first marker's ``recursion_depth``."""


@dataclass(frozen=True)
class MarkerHop:
    """How deep a clear through markers is, and how deep it may go (set by the first marker)."""

    depth: int = 0
    limit: int | None = None


@dataclass(frozen=True)
class MarkedClear:
    """One clear a marker asks for: these tasks of that run, one hop deeper."""

    run: DagRun
    task_ids: list[str]
    hop: MarkerHop


def marked_clears(
    session: Session,
    run: DagRun,
    tasks: Mapping[str, TaskSpec],
    cleared: Collection[str],
    hop: MarkerHop,
) -> list[MarkedClear]:
    """The clears the markers among ``cleared`` (task ids of ``run``) lead to."""
    found: list[MarkedClear] = []
    for task_id in sorted(cleared):
        spec = tasks.get(task_id)
        if spec is None or spec.external_marker is None:
            continue
        marker = spec.external_marker
        limit = hop.limit if hop.limit is not None else marker.recursion_depth
        if hop.depth >= limit:
            raise MarkerDepthExceeded(
                f"clearing {run.dag_id}.{task_id} goes deeper than recursion_depth {limit} "
                "through ExternalTaskMarkers: raise it, or look for DAGs that mark each other"
            )
        # Imported when a marker is met: most clears meet none, and Jinja comes with it.
        from tradewind.standard.external_task import render_marker

        target = render_marker(marker.model_dump(), _run_values(run), f"{run.dag_id}.{task_id}")
        found += _clears_of(session, target, MarkerHop(hop.depth + 1, limit))
    return found


def _run_values(run: DagRun) -> dict[str, object]:
    return {
        "dag_id": run.dag_id,
        "run_id": run.run_id,
        "run_type": run.run_type,
        "conf": dict(run.conf or {}),
        "logical_date": run.logical_date,
        "data_interval_start": run.data_interval_start,
        "data_interval_end": run.data_interval_end,
    }


def _clears_of(session: Session, target: MarkerTarget, hop: MarkerHop) -> list[MarkedClear]:
    model = session.get(DagModel, target.dag_id)
    if model is None or not model.is_active:
        return []  # nothing of it is stored to clear
    tasks = structure_of(model).tasks
    if target.task_id not in tasks:
        return []
    ids = sorted(downstream_of(tasks, target.task_id))
    query = select(DagRun).where(
        DagRun.dag_id == target.dag_id, DagRun.logical_date == target.logical_date
    )
    return [MarkedClear(other, ids, hop) for other in session.scalars(query)]


def downstream_of(tasks: Mapping[str, TaskSpec], task_id: str) -> set[str]:
    """``task_id`` and every task downstream of it, however far."""
    seen = {task_id}
    todo = [task_id]
    while todo:
        for child in tasks[todo.pop()].downstream:
            if child in tasks and child not in seen:
                seen.add(child)
                todo.append(child)
    return seen
