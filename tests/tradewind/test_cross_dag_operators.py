"""The standard provider's cross-DAG operators on the authoring side: their arguments, what they
ask their supervisor (a fake client here) and what they make of the answers."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from typing import Any

import pytest

from tradewind import DAG
from tradewind.exceptions import DagDefinitionError, SkipTask
from tradewind.spellings import Airflow2Spelling
from tradewind.standard.external_task import (
    ExternalDagFailedError,
    ExternalDagNotFoundError,
    ExternalTaskFailedError,
    ExternalTaskGroupFailedError,
    ExternalTaskGroupNotFoundError,
    ExternalTaskMarker,
    ExternalTaskNotFoundError,
    ExternalTaskSensor,
    render_marker,
)
from tradewind.standard.trigger_dagrun import (
    DagIsPaused,
    DagRunAlreadyExists,
    TriggerDagRunOperator,
    TriggeredRunFailed,
    parse_logical_date,
    run_conf,
)

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


@dataclass
class FakeClient:
    """Answers the cross-DAG requests from canned values, and records what was asked."""

    outcome: str = "created"
    run_states: list[str | None] = field(default_factory=list)
    dag_states: list[str] = field(default_factory=list)
    task_instances: list[tuple[str, str, int, str]] = field(default_factory=list)
    dag_tasks: tuple[list[str], list[str], bool] | None = (["a", "b"], ["g"], False)
    asked: list[tuple[Any, ...]] = field(default_factory=list)

    def trigger_dag_run(self, *args: Any) -> str:
        self.asked.append(("trigger", *args))
        return self.outcome

    def get_dag_run_state(self, dag_id: str, run_id: str) -> str | None:
        return self.run_states.pop(0)

    def get_dag_run_states(self, dag_id: str, logical_dates: list[dt.datetime]) -> list[str]:
        self.asked.append(("run_states", dag_id, logical_dates))
        return self.dag_states

    def get_task_instance_states(self, *args: Any) -> list[tuple[str, str, int, str]]:
        self.asked.append(("ti_states", *args))
        return self.task_instances

    def get_dag_tasks(self, dag_id: str) -> tuple[list[str], list[str], bool] | None:
        return self.dag_tasks


@dataclass
class FakeTI:
    client: FakeClient
    pushed: dict[str, Any] = field(default_factory=dict)

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def context_of(client: FakeClient, **more: Any) -> dict[str, Any]:
    return {"ti": FakeTI(client), "logical_date": WHEN, **more}


def trigger(**kwargs: Any) -> TriggerDagRunOperator:
    with DAG("controller"):
        return TriggerDagRunOperator(task_id="t", trigger_dag_id="target", **kwargs)


def sensor(**kwargs: Any) -> ExternalTaskSensor:
    with DAG("watcher"):
        return ExternalTaskSensor(task_id="s", external_dag_id="target", **kwargs)


def test_a_trigger_creates_the_run_at_its_logical_date_and_pushes_its_run_id() -> None:
    client = FakeClient()
    context = context_of(client)
    trigger(logical_date=WHEN.isoformat(), conf={"x": 1}).execute(context)

    run_id = f"manual__{WHEN.isoformat()}"
    assert client.asked == [("trigger", "target", run_id, {"x": 1}, WHEN, False)]
    assert context["ti"].pushed == {"trigger_run_id": run_id}


def test_a_trigger_with_its_own_run_id_and_reset_asks_for_both() -> None:
    client = FakeClient(outcome="cleared")
    trigger(trigger_run_id="again", reset_dag_run=True).execute(context_of(client))
    assert client.asked[0][2] == "again" and client.asked[0][5] is True


def test_a_run_that_exists_fails_the_trigger_or_skips_it_when_asked() -> None:
    with pytest.raises(DagRunAlreadyExists, match=r"already has a run .r..*reset_dag_run=True"):
        trigger(trigger_run_id="r").execute(context_of(FakeClient(outcome="exists")))
    with pytest.raises(SkipTask, match="skip_when_already_exists"):
        skipping = trigger(trigger_run_id="r", skip_when_already_exists=True)
        skipping.execute(context_of(FakeClient(outcome="exists")))


def test_fail_when_dag_is_paused_fails_before_triggering() -> None:
    client = FakeClient(dag_tasks=([], [], True))
    with pytest.raises(DagIsPaused, match="DAG target is paused"):
        trigger(fail_when_dag_is_paused=True).execute(context_of(client))
    assert client.asked == []
    running = FakeClient()
    trigger(fail_when_dag_is_paused=True).execute(context_of(running))
    assert running.asked[0][0] == "trigger"


def test_the_deprecated_poll_interval_is_the_poke_interval() -> None:
    with pytest.warns(Airflow2Spelling, match="poke_interval"):
        assert sensor(poll_interval=7).poke_interval == 7


def test_waiting_ends_on_an_allowed_state_and_fails_on_a_failed_one() -> None:
    client = FakeClient(run_states=["queued", "running", "success"])
    trigger(wait_for_completion=True, poke_interval=0).execute(context_of(client))
    assert client.run_states == []

    failing = FakeClient(run_states=["running", "failed"])
    with pytest.raises(TriggeredRunFailed, match="ended failed, one of failed_states"):
        trigger(wait_for_completion=True, poke_interval=0).execute(context_of(failing))


class RunState(enum.Enum):
    SUCCESS = "success"
    FAILED = "failed"


def test_states_may_be_given_as_enum_members() -> None:
    assert trigger(allowed_states=[RunState.FAILED]).allowed_states == ["failed"]
    assert sensor(failed_states=[RunState.FAILED]).failed_states == ["failed"]


def test_failed_states_can_name_success() -> None:
    client = FakeClient(run_states=["success"])
    waiting = trigger(
        wait_for_completion=True,
        poke_interval=0,
        allowed_states=["failed"],
        failed_states=["success"],
    )
    with pytest.raises(TriggeredRunFailed, match="ended success"):
        waiting.execute(context_of(client))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"allowed_states": ["done"]}, "allowed_states names 'done': use DAG run states"),
        ({"failed_states": ["skipped"]}, "failed_states names 'skipped'"),
        ({"poke_interval": "soon"}, "poke_interval must be a number of seconds"),
        ({"logical_date": 5}, "logical_date must be a datetime, a string or None"),
        ({"retries_please": 1}, "argument 'retries_please' is not supported"),
    ],
)
def test_a_trigger_refuses_bad_arguments_in_one_line(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(DagDefinitionError, match=message) as refused:
        trigger(**kwargs)
    assert "\n" not in str(refused.value)


def test_conf_and_logical_date_are_parsed_as_airflow_does() -> None:
    assert run_conf('{"a": [1]}', "t") == {"a": [1]}
    assert run_conf(None, "t") == {}
    with pytest.raises(ValueError, match="conf must be a JSON object, not list"):
        run_conf("[1]", "t")
    naive = parse_logical_date("2026-01-02 03:04:05", "t")
    assert naive == WHEN
    assert parse_logical_date(None, "t").tzinfo is not None
    with pytest.raises(ValueError, match="'soon' is not an ISO date"):
        parse_logical_date("soon", "t")


def test_the_sensor_on_tasks_counts_as_airflow_does() -> None:
    done = FakeClient(task_instances=[("r", "a", -1, "success"), ("r", "b", -1, "success")])
    assert sensor(external_task_ids=["a", "b"]).poke(context_of(done)) is True
    assert done.asked == [("ti_states", "target", [WHEN], ["a", "b"], None)]

    half = FakeClient(task_instances=[("r", "a", -1, "success"), ("r", "b", -1, "running")])
    assert sensor(external_task_ids=["a", "b"]).poke(context_of(half)) is False


def test_the_sensor_fails_on_failed_states_skips_with_soft_fail_or_skipped_states() -> None:
    failed = FakeClient(task_instances=[("r", "a", -1, "failed")])
    with pytest.raises(ExternalTaskFailedError, match=r"tasks \['a'\] of DAG target failed"):
        sensor(external_task_id="a", failed_states=["failed"]).poke(context_of(failed))
    with pytest.raises(SkipTask, match="soft_fail"):
        soft = sensor(external_task_id="a", failed_states=["failed"], soft_fail=True)
        soft.poke(context_of(failed))
    skipped = FakeClient(task_instances=[("r", "a", -1, "skipped")])
    with pytest.raises(SkipTask, match="skipped_states"):
        sensor(external_task_id="a", skipped_states=["skipped"]).poke(context_of(skipped))


def test_the_failure_is_named_for_what_is_watched() -> None:
    group = FakeClient(task_instances=[("r", "g.a", -1, "failed")])
    with pytest.raises(ExternalTaskGroupFailedError, match="task group 'g' of DAG target failed"):
        sensor(external_task_group_id="g", failed_states=["failed"]).poke(context_of(group))
    run = FakeClient(dag_states=["failed"])
    with pytest.raises(ExternalDagFailedError, match="the run of DAG target failed"):
        sensor(failed_states=["failed"]).poke(context_of(run))


def test_the_sensor_on_a_group_wants_every_task_of_it_in_a_state() -> None:
    rows = [("r", "g.a", -1, "success"), ("r", "g.b", -1, "running")]
    assert (
        sensor(external_task_group_id="g").poke(context_of(FakeClient(task_instances=rows)))
        is False
    )
    rows[1] = ("r", "g.b", -1, "success")
    assert (
        sensor(external_task_group_id="g").poke(context_of(FakeClient(task_instances=rows))) is True
    )


def test_the_sensor_on_a_dag_watches_its_runs_at_the_dates_asked() -> None:
    client = FakeClient(dag_states=["success"])
    delta = sensor(execution_delta=dt.timedelta(days=1))
    assert delta.poke(context_of(client)) is True
    assert client.asked == [("run_states", "target", [WHEN - dt.timedelta(days=1)])]

    def two_dates(logical_date: dt.datetime, ds: str) -> list[dt.datetime]:
        assert ds == "2026-01-02"
        return [logical_date, logical_date.replace(tzinfo=None) - dt.timedelta(hours=1)]

    by_fn = sensor(execution_date_fn=two_dates)
    assert by_fn.poke(context_of(FakeClient(dag_states=["success"]), ds="2026-01-02")) is False
    assert by_fn.logical_dates(context_of(FakeClient(), ds="2026-01-02"))[1].tzinfo is dt.UTC


def test_check_existence_names_what_is_missing() -> None:
    with pytest.raises(ExternalTaskNotFoundError, match="external task c of DAG target"):
        sensor(external_task_id="c", check_existence=True).poke(context_of(FakeClient()))
    with pytest.raises(ExternalDagNotFoundError, match="external DAG target does not exist"):
        sensor(check_existence=True).poke(context_of(FakeClient(dag_tasks=None)))
    with pytest.raises(ExternalTaskGroupNotFoundError, match="task group 'h'"):
        sensor(external_task_group_id="h", check_existence=True).poke(context_of(FakeClient()))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"external_task_id": "a", "external_task_ids": ["b"]}, "not both"),
        ({"external_task_id": "a", "external_task_group_id": "g"}, "not both"),
        ({"external_task_ids": ["a", "a"]}, "names a task twice"),
        ({"allowed_states": ["success"], "failed_states": ["success"]}, "named twice"),
        ({"allowed_states": ["up_for_retry"]}, "'up_for_retry' is not a DAG run state"),
        ({"external_task_id": "a", "failed_states": ["lost"]}, "'lost' is not a task instance"),
        ({"execution_delta": dt.timedelta(1), "execution_date_fn": min}, "not both"),
        ({"mode": "later"}, "mode"),
    ],
)
def test_a_sensor_refuses_bad_arguments_in_one_line(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(DagDefinitionError, match=message) as refused:
        sensor(**kwargs)
    assert "\n" not in str(refused.value)


def test_a_marker_stores_its_target_with_the_dag_structure() -> None:
    with DAG("parent") as parent:
        ExternalTaskMarker(task_id="m", external_dag_id="child", external_task_id="c")
    stored = parent.structure()["tasks"]["m"]["external_marker"]
    assert stored == {
        "external_dag_id": "child",
        "external_task_id": "c",
        "logical_date": "{{ logical_date.isoformat() }}",
        "recursion_depth": 10,
    }
    with DAG("plain") as plain:
        TriggerDagRunOperator(task_id="t", trigger_dag_id="x")
    assert "external_marker" not in plain.structure()["tasks"]["t"]


def test_a_marker_renders_its_target_with_its_run() -> None:
    marker = {
        "external_dag_id": "child_{{ params.n }}",
        "external_task_id": "c",
        "logical_date": "{{ (logical_date - macros_free_delta).isoformat() }}",
    }
    run = {"logical_date": WHEN, "run_id": "r", "conf": {"n": 2}}
    with pytest.raises(ValueError, match=r"ExternalTaskMarker parent\.m: cannot render its target"):
        render_marker(marker, run, "parent.m")
    marker["logical_date"] = "{{ ds }}T00:00:00"
    target = render_marker(marker, run, "parent.m")
    assert (target.dag_id, target.task_id) == ("child_2", "c")
    assert target.logical_date == dt.datetime(2026, 1, 2, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"recursion_depth": 0}, "recursion_depth must be a positive integer"),
        ({"logical_date": 3}, "logical_date must be a datetime or a template string"),
    ],
)
def test_a_marker_refuses_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(DagDefinitionError, match=message), DAG("p"):
        ExternalTaskMarker(task_id="m", external_dag_id="c", external_task_id="t", **kwargs)


def test_the_deferrable_cross_dag_operators_defer_on_their_triggers() -> None:
    from tradewind.triggers import TaskDeferred
    from tradewind.triggers.external_task import DagStateTrigger, WorkflowTrigger

    waiting = sensor(external_task_id="a", deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        waiting.execute(context_of(FakeClient()))
    trigger_ = deferred.value.trigger
    assert isinstance(trigger_, WorkflowTrigger) and trigger_.logical_dates == [WHEN]
    assert (trigger_.external_dag_id, trigger_.external_task_ids) == ("target", ["a"])
    assert deferred.value.method_name == "execute_complete"
    waiting.execute_complete(context_of(FakeClient()), {"status": "success"})
    with pytest.raises(ExternalTaskFailedError):
        waiting.execute_complete(context_of(FakeClient()), {"status": "failed"})

    client = FakeClient()
    triggering = trigger(logical_date=WHEN.isoformat(), wait_for_completion=True, deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        triggering.execute(context_of(client))
    run_id = f"manual__{WHEN.isoformat()}"
    assert isinstance(deferred.value.trigger, DagStateTrigger)
    assert deferred.value.trigger.run_ids == [run_id] and deferred.value.kwargs == {
        "run_id": run_id
    }
    event = {"dag_id": "target", "run_states": {run_id: "failed"}}
    with pytest.raises(TriggeredRunFailed):
        triggering.execute_complete(context_of(client), event, run_id=run_id)
