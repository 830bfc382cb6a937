"""Creating DAG runs, keeping their task instances true to the DAG, and clearing them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from state.core import (
    CLEARABLE,
    INCREMENT,
    TI_TABLE,
    DagModel,
    DagRun,
    DagRunState,
    DagStructure,
    TaskInstance,
    TaskInstanceState,
    TaskSpec,
    TaskStateValue,
    XCom,
    insert_missing,
    structure_of,
    transition_run,
    transition_tis,
    utcnow,
)
from state.engine.deferral import cancel_triggers
from state.engine.marker_clear import MarkerHop, marked_clears
from state.engine.run_life import tasks_in_run
from state.engine.run_wake import notify_run_created
from state.records import cleared_try, keep_cleared_try, refers_to_object
from tradewind.ids import check_run_id
from tradewind.timetable_base import InvalidTimetable
from tradewind.timetable_store import rebuild_timetable
from tradewind.timetables import timetable_of
from tradewind.timezones import as_utc

TI = TaskInstanceState


#: How a run of each type was triggered when its maker does not say (Airflow's names).
TRIGGERED_BY_RUN_TYPE = {
    "scheduled": "timetable",
    "asset_triggered": "asset",
    "backfill": "backfill",
    "test": "test",
}


class RunExists(ValueError):
    """A run with that run id already exists for the DAG."""


class UnknownDag(LookupError):
    """No DAG with that id has been parsed (or it failed to import)."""


def get_dag_model(session: Session, dag_id: str) -> DagModel:
    dag_model = session.get(DagModel, dag_id)
    if dag_model is None or not dag_model.is_active:
        raise UnknownDag(f"no DAG named {dag_id!r}: see `tradewind dags list`")
    return dag_model


def task_instance_rows(run: DagRun, tasks: Mapping[str, TaskSpec]) -> list[dict[str, Any]]:
    """The rows of a ``none`` task instance per task of ``tasks`` in ``run``, for one INSERT
    (none for a task whose ``end_date`` is before the run's logical date)."""
    return [
        {
            "dag_id": run.dag_id,
            "run_id": run.run_id,
            "task_id": task_id,
            "map_index": -1,
            "state": TI.NONE,
            "try_number": 0,
            "max_tries": spec.max_tries,
            "queue": spec.queue,
            "pool": spec.pool,
            "priority_weight": spec.priority_weight,
            "pool_slots": spec.pool_slots,
        }
        for task_id, spec in tasks_in_run(tasks, run).items()
    ]


def create_run(
    session: Session,
    dag_id: str,
    run_id: str | None = None,
    conf: Mapping[str, Any] | None = None,
    run_type: str = "manual",
    data_interval: tuple[dt.datetime, dt.datetime] | None = None,
    partition: tuple[str, dt.datetime | None] | None = None,
    logical_date: dt.datetime | None = None,
    triggered_by: str | None = None,
    user: str | None = None,
) -> DagRun:
    """A queued run and a ``none`` task instance per task; the scheduler takes it from there.

    ``partition``: the key (and the period's start) of a partitioned DAG's run.
    ``logical_date``: by default the data interval's end (or now); a timetable object's run
    gives its interval's start, as Airflow does.
    ``triggered_by``: the way in (Airflow's ``DagRunTriggeredByType``: ``ui``, ``cli``,
    ``rest_api``, ``operator``...), by default what the run type says (``timetable``,
    ``asset``, ``backfill``, ``test``); ``user``: the person who made it, if one did."""
    if run_id is not None:
        check_run_id(run_id)  # InvalidId: a run id a log folder cannot safely be named after
    dag_model = get_dag_model(session, dag_id)
    now = utcnow()
    if data_interval is None and run_type in _BY_HAND:
        logical_date = logical_date or now
        data_interval = manual_interval(structure_of(dag_model), logical_date)
    run = DagRun(
        dag_id=dag_id,
        run_id=run_id or f"{run_type}__{now.isoformat(timespec='microseconds')}",
        state=DagRunState.QUEUED,
        run_type=run_type,
        conf=dict(conf or {}),
        version_hash=dag_model.version_hash,
        logical_date=logical_date or (data_interval[1] if data_interval else now),
        data_interval_start=data_interval[0] if data_interval else None,
        data_interval_end=data_interval[1] if data_interval else None,
        partition_key=partition[0] if partition else None,
        partition_date=partition[1] if partition else None,
        created_at=now,
        triggered_by=triggered_by or TRIGGERED_BY_RUN_TYPE.get(run_type),
        triggering_user_name=user,
    )
    try:
        with session.begin_nested():
            session.add(run)
            session.flush()
    except IntegrityError:
        raise RunExists(f"DAG {dag_id!r} already has a run {run.run_id!r}") from None
    # One INSERT of plain rows: as ORM objects, the 2,000 task instances of a large DAG took
    # 0.6 s to flush, all of it between the run's creation and its first task's start.
    rows = task_instance_rows(run, structure_of(dag_model).tasks)
    if rows:
        session.execute(insert(TI_TABLE), rows)
    notify_run_created(session)
    return run


#: The runs a person asks for: their data interval is the schedule's, inferred as Airflow does.
_BY_HAND = frozenset({"manual", "test"})


def manual_interval(
    structure: DagStructure, run_after: dt.datetime
) -> tuple[dt.datetime, dt.datetime] | None:
    """The data interval of a run asked for at ``run_after``, as Airflow infers it: a cron
    schedule's latest complete interval, ``run_after`` less a timedelta schedule's delta, a
    timetable object's own answer, and the instant ``run_after`` for a DAG with no schedule."""
    if structure.timetable is not None:
        try:
            table = rebuild_timetable(structure.timetable)
            interval = table.infer_manual_data_interval(run_after=run_after)
        except (InvalidTimetable, ImportError, AttributeError, TypeError, ValueError):
            return None  # a timetable class that cannot be rebuilt here: no interval, as before
        return as_utc(interval.start), as_utc(interval.end)
    schedule = structure.schedule
    if schedule is None or schedule in ("@once", "@continuous"):
        return run_after, run_after
    if schedule.startswith("interval:"):
        delta = dt.timedelta(seconds=float(schedule.removeprefix("interval:")))
        return run_after - delta, run_after
    cron = timetable_of(schedule, run_after, structure.timezone)
    assert cron is not None  # None only for "@once"
    end = cron.last_at_or_before(run_after)
    return cron.before(end), end


def verify_integrity(
    session: Session, run: DagRun, structure: DagStructure, version_hash: str | None
) -> None:
    """Bring a run's task instances in line with the DAG's current version.

    Tasks new to the DAG get a task instance, tasks gone are marked ``removed`` (kept for
    lineage), and a removed task that came back is restored to ``none``.
    """
    tasks = structure.tasks
    rows = session.execute(
        select(TaskInstance.id, TaskInstance.task_id, TaskInstance.state).where(
            TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
        )
    ).all()
    present = {row.task_id for row in rows}
    gone = [row.id for row in rows if row.task_id not in tasks and row.state != TI.REMOVED]
    back = [row.id for row in rows if row.task_id in tasks and row.state == TI.REMOVED]
    removable = [s for s in TI if s not in (TI.RUNNING, TI.QUEUED, TI.REMOVED)]
    transition_tis(session, gone, removable, TI.REMOVED)
    transition_tis(session, back, [TI.REMOVED], TI.NONE)
    # One INSERT for all new tasks. A row another scheduler inserted first is skipped by the
    # unique key, and this transaction goes on (a failed INSERT would abort it on PostgreSQL).
    new = {task_id: tasks[task_id] for task_id in sorted(tasks.keys() - present)}
    keys = ["dag_id", "run_id", "task_id", "map_index"]
    insert_missing(session, TaskInstance, task_instance_rows(run, new), keys)
    # A gone task still queued or running is removed once its try ends: until then the run is
    # verified again at each pass, or that try's end would count in the run's outcome.
    if not any(row.task_id not in tasks and row.state in (TI.RUNNING, TI.QUEUED) for row in rows):
        run.version_hash = version_hash


def clear_task_instances(
    session: Session,
    run: DagRun,
    task_ids: Collection[str] | None = None,
    keep_state: bool = False,
    purge_xcoms: Callable[[Sequence[XCom]], None] | None = None,
    purge_states: Callable[[Sequence[TaskStateValue]], None] | None = None,
    hop: MarkerHop | None = None,
) -> int:
    """Reset task instances for another run: a new generation, XComs (and state) discarded.

    The try number is kept (tries go on counting) and the task gets its full retries again.
    ``purge_xcoms`` is given the XCom rows about to be deleted, so a backend that keeps values
    elsewhere deletes them too (``worker.xcom.xcom_purger``); ``purge_states`` likewise gets the
    discarded state rows that refer to objects (``worker.state_store.state_purger``). If either
    raises, nothing is cleared. An ``ExternalTaskMarker`` cleared clears what it marks in its
    DAG's run too (``state.engine.marker_clear``; ``hop``: how deep that clear already is).
    """
    tasks = structure_of(get_dag_model(session, run.dag_id)).tasks
    query = select(TaskInstance).where(
        TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
    )
    if task_ids:
        query = query.where(TaskInstance.task_id.in_(task_ids))
    # populate_existing: a row this session loaded earlier may be stale; clear what it is now.
    loaded = session.scalars(query, execution_options={"populate_existing": True})
    tis = [ti for ti in loaded if ti.state in CLEARABLE]
    cleared = reset_task_instances(session, run, tis, tasks, keep_state, purge_xcoms, purge_states)
    marked = [ti.task_id for ti in tis]
    for other in marked_clears(session, run, tasks, marked, hop or MarkerHop()):
        cleared += clear_task_instances(
            session, other.run, other.task_ids, keep_state, purge_xcoms, purge_states, other.hop
        )
    return cleared


def reset_task_instances(
    session: Session,
    run: DagRun,
    tis: Sequence[TaskInstance],
    tasks: Mapping[str, TaskSpec],
    keep_state: bool = False,
    purge_xcoms: Callable[[Sequence[XCom]], None] | None = None,
    purge_states: Callable[[Sequence[TaskStateValue]], None] | None = None,
    reset_run: bool = True,
) -> int:
    """Clear exactly ``tis`` (of ``run``, loaded now): no marker followed, nothing added.

    Returns how many moved; the run goes back to ``queued`` (unless ``reset_run`` is False)
    when one of them did and it had ended, so the scheduler runs them again.
    """
    cleared = 0
    for ti in tis:
        spec = tasks.get(ti.task_id)
        retries = spec.retries if spec else 0
        values = {
            "generation": INCREMENT,
            "max_tries": ti.try_number + retries + 1,
            "fence_token": None,
            "next_retry_at": None,
            "end_date": None,
            "error": None,
            "deliveries": 0,
        }
        copy = cleared_try(ti)  # the try as it was: the clear resets its row
        if ti.state == TI.DEFERRED:  # its trigger is cancelled (state/engine/deferral.py)
            values.update(next_method=None, next_kwargs=None)
            cancel_triggers(session, [ti.id])
        # A writer that moved it since the read won: its results are not ours to discard.
        if transition_tis(session, [ti.id], [TI(ti.state)], TI.NONE, values):
            keep_cleared_try(session, copy)
            _discard_results(session, ti, keep_state, purge_xcoms, purge_states)
            cleared += 1
    if reset_run and cleared and run.state in (DagRunState.SUCCESS, DagRunState.FAILED):
        values = {"end_date": None}
        transition_run(session, run.id, [DagRunState(run.state)], DagRunState.QUEUED, values)
    return cleared


def _discard_results(
    session: Session,
    ti: TaskInstance,
    keep_state: bool,
    purge_xcoms: Callable[[Sequence[XCom]], None] | None = None,
    purge_states: Callable[[Sequence[TaskStateValue]], None] | None = None,
) -> None:
    if purge_xcoms is not None:
        rows = session.scalars(select(XCom).where(*_rows_of(XCom, ti))).all()
        if rows:
            purge_xcoms(rows)
    if purge_states is not None and not keep_state:
        query = select(TaskStateValue).where(*_rows_of(TaskStateValue, ti), refers_to_object())
        if state_rows := session.scalars(query).all():
            purge_states(state_rows)
    tables: list[type[XCom] | type[TaskStateValue]] = (
        [XCom] if keep_state else [XCom, TaskStateValue]
    )
    for table in tables:
        session.execute(delete(table).where(*_rows_of(table, ti)))


def _rows_of(table: type[XCom] | type[TaskStateValue], ti: TaskInstance) -> tuple[Any, ...]:
    return (
        table.dag_id == ti.dag_id,
        table.run_id == ti.run_id,
        table.task_id == ti.task_id,
        table.map_index == ti.map_index,
    )


def mark_run_started(session: Session, run: DagRun) -> None:
    if run.state == DagRunState.QUEUED:
        transition_run(
            session, run.id, [DagRunState.QUEUED], DagRunState.RUNNING, {"start_date": utcnow()}
        )
        # As committed: an attribute set would make the flush write the state a second time.
        set_committed_value(run, "state", DagRunState.RUNNING)
