"""``TriggerDagRunOperator``: a task that creates a run of another DAG, and may wait for its end.

The run is created by the supervisor the way ``tradewind dags trigger`` creates one (the conf
checked against the DAG's params first), at ``logical_date`` (now when not given), as
``trigger_run_id`` (``manual__<logical date>`` when not given). Its run id is pushed as the
``trigger_run_id`` XCom, as Airflow does. If the run exists already, ``reset_dag_run`` clears
it to run again, ``skip_when_already_exists`` skips this task, and otherwise the task fails.
With ``wait_for_completion`` the task then asks every ``poke_interval`` seconds for the run's
state until it is in ``allowed_states`` (success) or ``failed_states`` (the task fails),
holding its worker slot as Airflow's non-deferrable operator does; with ``deferrable=True`` it
waits on the triggerer instead (a ``DagStateTrigger``), its slot freed.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Protocol

from tradewind.exceptions import DagDefinitionError, SkipTask, TradewindError
from tradewind.operators import BaseOperator
from tradewind.spellings import airflow2_spelling

#: The XCom key the created run's id is pushed under (Airflow's).
XCOM_RUN_ID = "trigger_run_id"
#: The states a DAG run can be in.
DAG_RUN_STATES = frozenset({"queued", "running", "success", "failed"})


class CrossDagClient(Protocol):
    """What the cross-DAG operators ask their supervisor (the worker's task runner answers)."""

    def trigger_dag_run(
        self,
        dag_id: str,
        run_id: str,
        conf: dict[str, Any],
        logical_date: dt.datetime | None,
        reset_dag_run: bool,
    ) -> str: ...

    def get_dag_run_state(self, dag_id: str, run_id: str) -> str | None: ...

    def get_dag_run_states(self, dag_id: str, logical_dates: list[dt.datetime]) -> list[str]: ...

    def get_task_instance_states(
        self,
        dag_id: str,
        logical_dates: list[dt.datetime],
        task_ids: list[str] | None,
        task_group_id: str | None,
    ) -> list[tuple[str, str, int, str]]: ...

    def get_dag_tasks(self, dag_id: str) -> tuple[list[str], list[str], bool] | None: ...


class DagRunAlreadyExists(TradewindError):
    """The run to trigger exists already (and neither reset nor skip was asked for)."""


class DagIsPaused(TradewindError):
    """``fail_when_dag_is_paused``: the DAG to trigger is paused."""


class TriggeredRunFailed(TradewindError):
    """The triggered run ended in one of ``failed_states``."""


def cross_dag_client(context: dict[str, Any]) -> CrossDagClient:
    """The running try's supervisor client, which answers the cross-DAG requests."""
    client: CrossDagClient = context["ti"].client
    return client


def state_names(given: Iterable[Any]) -> list[str]:
    """States as their names: strings, or the members of a state enum (``DagRunState.SUCCESS``)."""
    return [str(getattr(state, "value", state)) for state in given]


def dag_run_states(where: str, name: str, given: Iterable[str] | None, default: str) -> list[str]:
    """``allowed_states`` / ``failed_states``, each a DAG run state."""
    states = state_names(given) if given is not None else [default]
    unknown = sorted(set(states) - DAG_RUN_STATES)
    if unknown:
        raise DagDefinitionError(
            f"{where}: {name} names {unknown[0]!r}: use DAG run states {sorted(DAG_RUN_STATES)}"
        )
    return states


class TriggerDagRunOperator(BaseOperator):
    """Trigger a run of ``trigger_dag_id``; with ``wait_for_completion``, wait for its end."""

    template_fields: ClassVar[Sequence[str]] = (
        "trigger_dag_id",
        "trigger_run_id",
        "logical_date",
        "conf",
        "wait_for_completion",
        "skip_when_already_exists",
    )

    def __init__(
        self,
        *,
        trigger_dag_id: str,
        trigger_run_id: str | None = None,
        conf: dict[str, Any] | str | None = None,
        logical_date: str | dt.datetime | None = None,
        reset_dag_run: bool = False,
        wait_for_completion: bool = False,
        poke_interval: float = 60,
        allowed_states: Iterable[str] | None = None,
        failed_states: Iterable[str] | None = None,
        skip_when_already_exists: bool = False,
        fail_when_dag_is_paused: bool = False,
        deferrable: bool = False,
        openlineage_inject_parent_info: bool = True,
        **kwargs: Any,
    ) -> None:
        if "execution_date" in kwargs:
            airflow2_spelling("TriggerDagRunOperator(execution_date=...)", "logical_date")
            logical_date = kwargs.pop("execution_date")
        super().__init__(**kwargs)
        where = f"TriggerDagRunOperator {self.task_id}"
        self.deferrable = bool(deferrable)
        _check_types(where, logical_date, poke_interval)
        self.trigger_dag_id = trigger_dag_id
        self.trigger_run_id = trigger_run_id
        self.conf = conf
        self.logical_date = logical_date
        self.reset_dag_run = reset_dag_run
        self.wait_for_completion = wait_for_completion
        self.poke_interval = float(poke_interval)
        self.allowed_states = dag_run_states(where, "allowed_states", allowed_states, "success")
        self.failed_states = dag_run_states(where, "failed_states", failed_states, "failed")
        self.skip_when_already_exists = skip_when_already_exists
        self.fail_when_dag_is_paused = fail_when_dag_is_paused
        # Only acted on where OpenLineage runs, as in Airflow without it: Tradewind has none.
        self.openlineage_inject_parent_info = openlineage_inject_parent_info

    def execute(self, context: dict[str, Any]) -> None:
        client = cross_dag_client(context)
        logical_date = parse_logical_date(self.logical_date, self.task_id)
        run_id = str(self.trigger_run_id or f"manual__{logical_date.isoformat()}")
        self.trigger_run_id = run_id  # as Airflow leaves it, for whoever reads the operator
        conf = run_conf(self.conf, self.task_id)
        if self.fail_when_dag_is_paused:
            self._refuse_paused(client)
        outcome = client.trigger_dag_run(
            self.trigger_dag_id, run_id, conf, logical_date, self.reset_dag_run
        )
        if outcome == "exists":
            message = f"DAG {self.trigger_dag_id} already has a run {run_id!r}"
            if self.skip_when_already_exists:
                raise SkipTask(f"{message} (skip_when_already_exists)")
            raise DagRunAlreadyExists(
                f"{message}: set reset_dag_run=True to run it again, or skip_when_already_exists"
            )
        print(f"triggered {self.trigger_dag_id} run {run_id} ({outcome})")
        context["ti"].xcom_push(XCOM_RUN_ID, run_id)
        if self.wait_for_completion and self.deferrable:
            self._defer_until_done(run_id)
        if self.wait_for_completion:
            self._wait(client, run_id)

    def _defer_until_done(self, run_id: str) -> None:
        """Wait for the run on the triggerer (a ``DagStateTrigger``), the slot freed."""
        from tradewind.triggers.external_task import DagStateTrigger

        print(f"deferring until {self.trigger_dag_id} run {run_id} ends", flush=True)
        trigger = DagStateTrigger(
            dag_id=self.trigger_dag_id,
            states=[*self.allowed_states, *self.failed_states],
            run_ids=[run_id],
            poll_interval=self.poke_interval,
        )
        self.defer(trigger=trigger, method_name="execute_complete", kwargs={"run_id": run_id})

    def execute_complete(
        self, context: dict[str, Any], event: Any = None, run_id: str | None = None
    ) -> None:
        """Where the deferred operator resumes: the run ended in one of the named states."""
        run_id = str(run_id or self.trigger_run_id)
        states = (event or {}).get("run_states", {}) if isinstance(event, dict) else {}
        state = states.get(run_id)
        if state in self.failed_states:
            raise TriggeredRunFailed(
                f"{self.trigger_dag_id} run {run_id} ended {state}, one of failed_states"
            )
        print(f"{self.trigger_dag_id} run {run_id} is {state}", flush=True)

    def _refuse_paused(self, client: CrossDagClient) -> None:
        known = client.get_dag_tasks(self.trigger_dag_id)
        if known is not None and known[2]:
            raise DagIsPaused(f"DAG {self.trigger_dag_id} is paused (fail_when_dag_is_paused)")

    def _wait(self, client: CrossDagClient, run_id: str) -> None:
        """Ask for the run's state every ``poke_interval`` until it is allowed or failed."""
        while True:
            print(f"waiting for {self.trigger_dag_id} run {run_id} to be in {self.allowed_states}")
            time.sleep(self.poke_interval)
            state = client.get_dag_run_state(self.trigger_dag_id, run_id)
            if state in self.failed_states:
                raise TriggeredRunFailed(
                    f"{self.trigger_dag_id} run {run_id} ended {state}, one of failed_states"
                )
            if state in self.allowed_states:
                print(f"{self.trigger_dag_id} run {run_id} is {state}")
                return


def _check_types(where: str, logical_date: object, poke_interval: object) -> None:
    if not isinstance(logical_date, str | dt.datetime | None):
        raise DagDefinitionError(
            f"{where}: logical_date must be a datetime, a string or None, "
            f"not {type(logical_date).__name__}"
        )
    if isinstance(poke_interval, bool) or not isinstance(poke_interval, int | float):
        raise DagDefinitionError(f"{where}: poke_interval must be a number of seconds")


def parse_logical_date(value: str | dt.datetime | None, task_id: str) -> dt.datetime:
    """The rendered ``logical_date`` as an aware datetime (now when not given)."""
    if value is None or value == "":
        return dt.datetime.now(dt.UTC)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(
                f"TriggerDagRunOperator {task_id}: logical_date {value!r} is not an ISO date"
            ) from None
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


def run_conf(conf: dict[str, Any] | str | None, task_id: str) -> dict[str, Any]:
    """The rendered ``conf`` as a JSON object (a string is parsed, as Airflow does)."""
    where = f"TriggerDagRunOperator {task_id}: conf"
    if conf is None or conf == "":
        return {}
    if isinstance(conf, str):
        try:
            conf = json.loads(conf)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where} is not JSON: {error}") from None
    if not isinstance(conf, dict):
        raise ValueError(f"{where} must be a JSON object, not {type(conf).__name__}")
    try:
        json.dumps(conf)
    except TypeError as error:
        raise ValueError(f"{where} must be JSON-serializable: {error}") from None
    return conf
