"""``ExternalTaskSensor`` and ``ExternalTaskMarker``: one DAG waiting on, or clearing, another.

The sensor finds the other DAG's runs by logical date, as Airflow does: its own run's logical
date, moved back by ``execution_delta`` or replaced by what ``execution_date_fn`` returns. It
asks its supervisor for the states there (never SQL), and is done when every run (or every
task of ``external_task_ids``, or the whole ``external_task_group_id``) is in
``allowed_states``; ``failed_states`` fail it (skip it with ``soft_fail``), ``skipped_states``
skip it. Without a task or group, it watches the runs themselves.

The marker does nothing when it runs; what it marks is stored with the DAG's structure, and a
clear that selects it clears the marked task in the other DAG's run at ``logical_date`` and
that task's downstream (``state/engine/marker_clear.py``, which renders the templates here).
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from tradewind.exceptions import DagDefinitionError, SkipTask, TradewindError
from tradewind.operators import BaseOperator
from tradewind.runtime_context import date_keys
from tradewind.sensor_operator import BaseSensorOperator
from tradewind.spellings import airflow2_spelling
from tradewind.standard.trigger_dagrun import (
    DAG_RUN_STATES,
    CrossDagClient,
    cross_dag_client,
    state_names,
)

#: Task instance states an ``ExternalTaskSensor`` on tasks may name.
TASK_STATES = frozenset(
    {
        "none",
        "scheduled",
        "queued",
        "running",
        "success",
        "failed",
        "up_for_retry",
        "up_for_reschedule",
        "upstream_failed",
        "skipped",
        "removed",
        "deferred",
    }
)


class ExternalTaskSensorError(TradewindError):
    """What an ``ExternalTaskSensor`` fails with (the provider's exceptions, by the same names)."""


AirflowExternalTaskSensorException = ExternalTaskSensorError


class ExternalDagNotFoundError(ExternalTaskSensorError):
    """``check_existence``: the DAG the sensor watches does not exist."""


class ExternalTaskNotFoundError(ExternalTaskSensorError):
    """``check_existence``: a task the sensor watches does not exist."""


class ExternalTaskGroupNotFoundError(ExternalTaskSensorError):
    """``check_existence``: the task group the sensor watches does not exist."""


class ExternalDagFailedError(ExternalTaskSensorError):
    """The runs the sensor watches reached one of its ``failed_states``."""


class ExternalTaskFailedError(ExternalTaskSensorError):
    """A task the sensor watches reached one of its ``failed_states``."""


class ExternalTaskGroupFailedError(ExternalTaskSensorError):
    """The task group the sensor watches reached one of its ``failed_states``."""


class DuplicateStateError(ExternalTaskSensorError):
    """A state given both as allowed and as failed (or skipped): the sensor cannot tell."""


class ExternalTaskSensor(BaseSensorOperator):
    """Wait for a task, a task group or a whole run of another DAG at a logical date; with
    ``deferrable=True`` on a ``WorkflowTrigger`` in the triggerer."""

    can_defer = True

    template_fields: ClassVar[Sequence[str]] = (
        "external_dag_id",
        "external_task_id",
        "external_task_ids",
        "external_task_group_id",
    )

    def __init__(
        self,
        *,
        external_dag_id: str,
        external_task_id: str | None = None,
        external_task_ids: Iterable[str] | None = None,
        external_task_group_id: str | None = None,
        allowed_states: Iterable[str] | None = None,
        skipped_states: Iterable[str] | None = None,
        failed_states: Iterable[str] | None = None,
        execution_delta: dt.timedelta | None = None,
        execution_date_fn: Callable[..., Any] | None = None,
        check_existence: bool = False,
        deferrable: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(deferrable=deferrable, **_poke_interval_spelled(kwargs))
        where = f"ExternalTaskSensor {self.task_id}"
        self.external_dag_id = external_dag_id
        self.external_task_id = external_task_id
        self.external_task_ids = _task_ids(where, external_task_id, external_task_ids)
        self.external_task_group_id = external_task_group_id
        if self.external_task_ids and external_task_group_id is not None:
            raise DagDefinitionError(f"{where}: give external_task_id(s) or a group, not both")
        self.allowed_states = state_names(allowed_states or ["success"])
        self.skipped_states = state_names(skipped_states or [])
        self.failed_states = state_names(failed_states or [])
        self._check_states(where)
        if execution_delta is not None and execution_date_fn is not None:
            raise DagDefinitionError(
                f"{where}: give execution_delta or execution_date_fn, not both"
            )
        self.execution_delta = execution_delta
        self.execution_date_fn = execution_date_fn
        self.check_existence = check_existence

    def _check_states(self, where: str) -> None:
        given = [*self.allowed_states, *self.skipped_states, *self.failed_states]
        if len(set(given)) != len(given):
            raise DagDefinitionError(
                f"{where}: a state is named twice across allowed_states, skipped_states and "
                "failed_states: name each state once"
            )
        watches_tasks = bool(self.external_task_ids or self.external_task_group_id)
        valid = TASK_STATES if watches_tasks else DAG_RUN_STATES
        unknown = sorted(set(given) - valid)
        if unknown:
            kind = "task instance" if watches_tasks else "DAG run"
            raise DagDefinitionError(
                f"{where}: {unknown[0]!r} is not a {kind} state: use one of {sorted(valid)}"
            )

    def poke(self, context: dict[str, Any]) -> bool:
        dates = self.logical_dates(context)
        client = cross_dag_client(context)
        if self.check_existence:
            self._check_existence(client)
        print(f"poking {self._watched()} of DAG {self.external_dag_id} at {_dates_text(dates)}")
        if self.failed_states and self._count(client, dates, self.failed_states) > 0:
            message = f"{self._watched()} of DAG {self.external_dag_id} failed"
            if self.soft_fail:
                raise SkipTask(f"{message}: skipped (soft_fail)")
            raise self._failure()(message)
        if self.skipped_states and self._count(client, dates, self.skipped_states) > 0:
            raise SkipTask(
                f"{self._watched()} of DAG {self.external_dag_id} reached one of skipped_states"
            )
        return self._count(client, dates, self.allowed_states) == len(dates)

    def _failure(self) -> type[ExternalTaskSensorError]:
        if self.external_task_ids:
            return ExternalTaskFailedError
        if self.external_task_group_id:
            return ExternalTaskGroupFailedError
        return ExternalDagFailedError

    def _watched(self) -> str:
        if self.external_task_ids:
            return f"tasks {self.external_task_ids}"
        if self.external_task_group_id:
            return f"task group {self.external_task_group_id!r}"
        return "the run"

    def _count(self, client: CrossDagClient, dates: list[dt.datetime], states: list[str]) -> float:
        """How many of ``dates`` are in ``states``, counted as Airflow counts them."""
        return count_in_states(
            client,
            self.external_dag_id,
            self.external_task_ids,
            self.external_task_group_id,
            dates,
            states,
        )

    def execute(self, context: dict[str, Any]) -> Any:
        """Poke, or with ``deferrable=True`` wait on a ``WorkflowTrigger`` in the triggerer."""
        if not self.deferrable:
            return super().execute(context)
        from tradewind.triggers.external_task import WorkflowTrigger

        dates = self.logical_dates(context)
        if self.check_existence:
            self._check_existence(cross_dag_client(context))
        print(f"deferring on {self._watched()} of DAG {self.external_dag_id}", flush=True)
        trigger = WorkflowTrigger(
            external_dag_id=self.external_dag_id,
            logical_dates=dates,
            external_task_ids=self.external_task_ids,
            external_task_group_id=self.external_task_group_id,
            failed_states=self.failed_states,
            skipped_states=self.skipped_states,
            allowed_states=self.allowed_states,
            poke_interval=self.poke_interval,
            soft_fail=self.soft_fail,
        )
        self.defer(trigger=trigger, method_name="execute_complete")

    def execute_complete(self, context: dict[str, Any], event: Any = None) -> None:
        """Where the deferred sensor resumes: the trigger's status decides."""
        status = (event or {}).get("status") if isinstance(event, dict) else None
        message = f"{self._watched()} of DAG {self.external_dag_id}"
        if status == "success":
            print(f"{message} reached {self.allowed_states}", flush=True)
            return
        if status == "skipped":
            raise SkipTask(f"{message} reached one of skipped_states")
        if status == "failed":
            if self.soft_fail:
                raise SkipTask(f"{message} failed: skipped (soft_fail)")
            raise self._failure()(f"{message} failed")
        raise ExternalTaskSensorError(f"{message}: unexpected trigger event {event!r}")

    def _check_existence(self, client: CrossDagClient) -> None:
        known = client.get_dag_tasks(self.external_dag_id)
        if known is None:
            raise ExternalDagNotFoundError(
                f"the external DAG {self.external_dag_id} does not exist"
            )
        task_ids, group_ids, _paused = known
        for task_id in self.external_task_ids or ():
            if task_id not in task_ids:
                raise ExternalTaskNotFoundError(
                    f"the external task {task_id} of DAG {self.external_dag_id} does not exist"
                )
        group = self.external_task_group_id
        if group is not None and group not in group_ids:
            raise ExternalTaskGroupNotFoundError(
                f"the external task group {group!r} of DAG {self.external_dag_id} does not exist"
            )

    def logical_dates(self, context: dict[str, Any]) -> list[dt.datetime]:
        """The logical dates of the other DAG's runs to watch."""
        own = context.get("logical_date")
        if own is None:
            raise ValueError(f"ExternalTaskSensor {self.task_id}: its run has no logical date")
        if self.execution_delta is not None:
            return [own - self.execution_delta]
        if self.execution_date_fn is not None:
            found = call_with_context(self.execution_date_fn, own, context)
            return [_aware(d) for d in (found if isinstance(found, list | tuple) else [found])]
        return [own]


def count_in_states(
    client: CrossDagClient,
    dag_id: str,
    task_ids: Sequence[str] | None,
    group_id: str | None,
    dates: list[dt.datetime],
    states: list[str],
) -> float:
    """How many of ``dates`` are in ``states``, counted as Airflow counts them (the sensor's
    poke and the ``WorkflowTrigger`` share it)."""
    if task_ids:
        found = client.get_task_instance_states(dag_id, dates, list(task_ids), None)
        matching = [ti for ti in found if ti[3] in states]
        return len(matching) / len(task_ids)
    if group_id:
        found = client.get_task_instance_states(dag_id, dates, None, group_id)
        return _runs_all_in(found, states)
    return sum(state in states for state in client.get_dag_run_states(dag_id, dates))


def _poke_interval_spelled(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``poll_interval``, the provider's deprecated name (still accepted there), as
    ``poke_interval``."""
    if "poll_interval" in kwargs:
        airflow2_spelling("ExternalTaskSensor(poll_interval=...)", "poke_interval")
        kwargs.setdefault("poke_interval", kwargs.pop("poll_interval"))
    return kwargs


def _task_ids(where: str, one: str | None, many: Iterable[str] | None) -> list[str] | None:
    listed = list(many) if many else None
    if one is not None and listed is not None:
        raise DagDefinitionError(f"{where}: give external_task_id or external_task_ids, not both")
    if listed is not None and len(set(listed)) != len(listed):
        raise DagDefinitionError(f"{where}: external_task_ids names a task twice")
    return [one] if one is not None else listed


def _runs_all_in(found: Iterable[Sequence[Any]], states: Iterable[str]) -> int:
    """The runs whose task instances (of a group) are all in ``states``."""
    by_run: dict[str, list[str]] = {}
    for run_id, _task_id, _map_index, state in found:
        by_run.setdefault(run_id, []).append(state)
    wanted = set(states)
    return sum(all(state in wanted for state in run) for run in by_run.values())


def call_with_context(function: Callable[..., Any], first: Any, context: Mapping[str, Any]) -> Any:
    """``function(first, **the context keys it names)`` (all of them if it takes ``**kwargs``),
    as Airflow calls ``execution_date_fn``."""
    given = {k: v for k, v in context.items() if k not in ("logical_date", "execution_date")}
    given["context"] = context
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return function(first, **given)
    names = {p.name for p in parameters}
    return function(first, **{k: v for k, v in given.items() if k in names})


def _dates_text(dates: Sequence[dt.datetime]) -> str:
    return ",".join(d.isoformat() for d in dates)


def _aware(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


class ExternalTaskMarker(BaseOperator):
    """Mark a task of another DAG as depending on this one: clearing this clears that too."""

    template_fields: ClassVar[Sequence[str]] = (
        "external_dag_id",
        "external_task_id",
        "logical_date",
    )

    def __init__(
        self,
        *,
        external_dag_id: str,
        external_task_id: str,
        logical_date: str | dt.datetime | None = "{{ logical_date.isoformat() }}",
        recursion_depth: int = 10,
        **kwargs: Any,
    ) -> None:
        if "execution_date" in kwargs:
            airflow2_spelling("ExternalTaskMarker(execution_date=...)", "logical_date")
            logical_date = kwargs.pop("execution_date")
        super().__init__(**kwargs)
        where = f"ExternalTaskMarker {self.task_id}"
        if isinstance(logical_date, dt.datetime):
            logical_date = logical_date.isoformat()
        if not isinstance(logical_date, str):
            raise DagDefinitionError(
                f"{where}: logical_date must be a datetime or a template string, not "
                f"{type(logical_date).__name__}"
            )
        if not isinstance(recursion_depth, int) or recursion_depth <= 0:
            raise DagDefinitionError(f"{where}: recursion_depth must be a positive integer")
        self.external_dag_id = external_dag_id
        self.external_task_id = external_task_id
        self.logical_date = logical_date
        self.recursion_depth = recursion_depth

    def execute(self, context: dict[str, Any]) -> None:
        """Nothing to do: the marker acts when it is cleared."""

    def extra_structure(self) -> dict[str, Any]:
        """What a clear needs of the marker, stored with the DAG's structure."""
        return {
            "external_marker": {
                "external_dag_id": self.external_dag_id,
                "external_task_id": self.external_task_id,
                "logical_date": self.logical_date,
                "recursion_depth": self.recursion_depth,
            }
        }


@dataclass(frozen=True)
class MarkerTarget:
    """A marker's fields rendered with its run: the task to clear and its run's logical date."""

    dag_id: str
    task_id: str
    logical_date: dt.datetime


def render_marker(marker: Mapping[str, Any], run: Mapping[str, Any], where: str) -> MarkerTarget:
    """Render a stored marker (``extra_structure``) with its run's values (ids, conf, dates)."""
    from jinja2 import TemplateError
    from jinja2.sandbox import SandboxedEnvironment

    logical_date = run.get("logical_date")
    context = {
        **date_keys(logical_date),
        "logical_date": logical_date,
        "data_interval_start": run.get("data_interval_start"),
        "data_interval_end": run.get("data_interval_end"),
        "run_id": run.get("run_id"),
        "dag_run": run,
        "params": run.get("conf", {}),
    }
    environment = SandboxedEnvironment()
    try:
        dag_id, task_id, date = (
            environment.from_string(str(marker[name])).render(**context)
            for name in ("external_dag_id", "external_task_id", "logical_date")
        )
        return MarkerTarget(dag_id, task_id, _aware(dt.datetime.fromisoformat(date)))
    except (TemplateError, ValueError) as error:
        raise ValueError(f"ExternalTaskMarker {where}: cannot render its target: {error}") from None
