"""What a task may ask of another DAG's runs: create one, and read run and task states.

The standard provider's cross-DAG operators (``tradewind/standard/``) reach here through their
supervisor: ``TriggerDagRunOperator`` creates a run as ``tradewind dags trigger`` does (the
conf checked against the DAG's params, then ``create_run``) and waits on its state;
``ExternalTaskSensor`` finds the other DAG's runs by logical date, as Airflow does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core import (
    DagRun,
    Fence,
    TaskInstance,
    TaskStateValue,
    XCom,
    assert_fence,
    structure_of,
)
from state.engine.runs import RunExists, clear_task_instances, create_run, get_dag_model
from tradewind.params import resolve_params

TriggerOutcome = Literal["created", "cleared", "exists"]


@dataclass(frozen=True)
class Purgers:
    """What deleting XCom and state rows needs to delete their objects too (None: the SQL
    backends, which keep none): a reset run's, and the API's clears and deletes."""

    xcoms: Callable[[Sequence[XCom]], None] | None = None
    states: Callable[[Sequence[TaskStateValue]], None] | None = None


def trigger_run(
    session: Session,
    dag_id: str,
    run_id: str,
    conf: Mapping[str, Any],
    logical_date: dt.datetime | None,
    reset: Purgers | None = None,
    fence: Fence | None = None,
) -> TriggerOutcome:
    """Create the run ``run_id`` of ``dag_id``; with ``reset``, clear it if it exists already.

    Raises ``UnknownDag``, and ``ParamValidationError`` for a conf that breaks a param (the
    check ``tradewind dags trigger`` and the API make before they create a run). ``fence``: the
    try asking, whose write this is: one given up (a zombie, a clear) creates nothing.
    """
    if fence is not None:
        assert_fence(session, fence)
    resolve_params(structure_of(get_dag_model(session, dag_id)), conf)
    interval = (logical_date, logical_date) if logical_date is not None else None
    try:
        create_run(
            session,
            dag_id,
            run_id=run_id,
            conf=conf,
            data_interval=interval,
            triggered_by="operator",  # a TriggerDagRunOperator's try
        )
        return "created"
    except RunExists:
        if reset is None:
            return "exists"
    run = session.scalars(select(DagRun).where(*_run_named(dag_id, run_id))).one()
    clear_task_instances(session, run, None, False, reset.xcoms, reset.states)
    return "cleared"


def _run_named(dag_id: str, run_id: str) -> tuple[Any, ...]:
    return (DagRun.dag_id == dag_id, DagRun.run_id == run_id)


def run_state(session: Session, dag_id: str, run_id: str) -> str | None:
    """The state of the run ``run_id`` of ``dag_id``; None when there is none."""
    state = session.scalar(select(DagRun.state).where(*_run_named(dag_id, run_id)))
    return str(state) if state is not None else None


def run_states_at(
    session: Session, dag_id: str, logical_dates: Collection[dt.datetime]
) -> list[str]:
    """The states of ``dag_id``'s runs whose logical date is one of ``logical_dates``."""
    query = select(DagRun.state).where(
        DagRun.dag_id == dag_id, DagRun.logical_date.in_(list(logical_dates))
    )
    return [str(state) for state in session.scalars(query)]


def task_states_at(
    session: Session,
    dag_id: str,
    logical_dates: Collection[dt.datetime],
    task_ids: Collection[str] | None,
    group_id: str | None,
) -> list[tuple[str, str, int, str]]:
    """``(run_id, task_id, map_index, state)`` of the task instances of ``task_ids`` (or of the
    tasks inside the group ``group_id``) in ``dag_id``'s runs at ``logical_dates``."""
    wanted = set(task_ids or ())
    if group_id is not None:
        wanted |= set(group_task_ids(session, dag_id, group_id))
    if not wanted:
        return []
    query = (
        select(
            TaskInstance.run_id, TaskInstance.task_id, TaskInstance.map_index, TaskInstance.state
        )
        .join(
            DagRun, (DagRun.dag_id == TaskInstance.dag_id) & (DagRun.run_id == TaskInstance.run_id)
        )
        .where(
            TaskInstance.dag_id == dag_id,
            TaskInstance.task_id.in_(sorted(wanted)),
            DagRun.logical_date.in_(list(logical_dates)),
        )
    )
    return [(row[0], row[1], row[2], str(row[3])) for row in session.execute(query)]


def group_task_ids(session: Session, dag_id: str, group_id: str) -> list[str]:
    """The tasks inside the group ``group_id`` of ``dag_id``, nested groups' included."""
    tasks = structure_of(get_dag_model(session, dag_id)).tasks
    return [
        task_id
        for task_id, spec in tasks.items()
        if spec.group is not None
        and (spec.group == group_id or spec.group.startswith(f"{group_id}."))
    ]


def dag_tasks_and_groups(session: Session, dag_id: str) -> DagTasks | None:
    """The task and group ids of ``dag_id`` and whether it is paused; None when it is unknown."""
    try:
        model = get_dag_model(session, dag_id)
    except LookupError:
        return None
    structure = structure_of(model)
    return DagTasks(list(structure.tasks), list(structure.groups), bool(model.is_paused))


@dataclass(frozen=True)
class DagTasks:
    """What ``check_existence`` and ``fail_when_dag_is_paused`` read of another DAG."""

    task_ids: list[str]
    group_ids: list[str]
    is_paused: bool
