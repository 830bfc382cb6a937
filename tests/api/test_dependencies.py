"""Why a task instance waits, as a pure function over what the store says (no database)."""

from __future__ import annotations

import datetime as dt

from api.dependencies import Situation, blockers
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import TaskInstance
from state.views.listing import PoolUse

TI = TaskInstanceState
NOW = dt.datetime(2026, 12, 1, 10, tzinfo=dt.UTC)


def situation(state: TI, **changes: object) -> Situation:
    ti = TaskInstance(dag_id="d", run_id="r", task_id="t", state=state, pool="p")
    values: dict[str, object] = {
        "ti": ti,
        "run_state": DagRunState.RUNNING,
        "dag_paused": False,
        "trigger_rule": "all_success",
        "upstream": [],
        "pool": PoolUse("p", 2),
        **changes,
    }
    return Situation(**values)  # type: ignore[arg-type]


def names(found: list) -> list[str]:  # type: ignore[type-arg]
    return [blocker.name for blocker in found]


def test_a_ready_task_instance_has_nothing_holding_it() -> None:
    assert blockers(situation(TI.NONE), NOW) == []
    assert blockers(situation(TI.SCHEDULED), NOW) == []


def test_finished_and_running_say_so() -> None:
    [finished] = blockers(situation(TI.SUCCESS), NOW)
    assert finished.reason == "the task instance has finished success"
    [running] = blockers(situation(TI.RUNNING), NOW)
    assert running.reason == "the task instance is already running"


def test_upstream_not_done_under_its_trigger_rule() -> None:
    waiting = situation(TI.NONE, upstream=[TI.SUCCESS, TI.RUNNING], trigger_rule="all_done")
    [rule] = blockers(waiting, NOW)
    assert (
        rule.reason
        == "1 of 2 upstream task instances are done; trigger rule all_done waits for more"
    )
    failed_upstream = situation(TI.NONE, upstream=[TI.FAILED], trigger_rule="all_success")
    assert blockers(failed_upstream, NOW) == []  # it is decided (upstream_failed): not waiting


def test_a_full_pool_a_paused_dag_an_ended_run_and_a_retry_wait() -> None:
    full = situation(TI.SCHEDULED, pool=PoolUse("p", 2, running=2))
    assert names(blockers(full, NOW)) == ["Pool Slots Available"]
    paused = situation(TI.NONE, dag_paused=True, run_state=DagRunState.FAILED)
    assert names(blockers(paused, NOW)) == ["DAG Not Paused", "Dag Run State"]
    retry = situation(TI.UP_FOR_RETRY)
    retry.ti.next_retry_at = NOW + dt.timedelta(seconds=30)
    [wait] = blockers(retry, NOW)
    assert wait.name == "Not In Retry Period" and "2026-12-01 10:00:30" in wait.reason
