"""The arguments acting across runs and on a run's life, as a DAG file gives them: checked where
the file loads, written into the structure only when set."""

from __future__ import annotations

import datetime as dt

import pytest

from tradewind import DAG, task
from tradewind.exceptions import DagDefinitionError
from tradewind.operators import BaseOperator


@task
def noop() -> None:
    pass


def test_task_options_reach_the_structure_and_wait_for_downstream_implies_the_past() -> None:
    with DAG("past", default_args={"depends_on_past": True}) as built:
        noop()
        noop.override(wait_for_downstream=True, depends_on_past=False)()
        noop.override(end_date=dt.datetime(2030, 1, 1), ignore_first_depends_on_past=True)()
    tasks = built.structure()["tasks"]
    assert tasks["noop"]["depends_on_past"] is True
    assert "wait_for_downstream" not in tasks["noop"]
    assert tasks["noop__1"]["depends_on_past"] is True  # as Airflow: waiting implies the past
    assert tasks["noop__1"]["wait_for_downstream"] is True
    assert tasks["noop__2"]["end_date"] == "2030-01-01T00:00:00+00:00"  # naive reads as UTC
    assert tasks["noop__2"]["ignore_first_depends_on_past"] is True
    assert built.get_task("noop__1").depends_on_past  # read like an operator's attribute


class Nothing(BaseOperator):
    def execute(self, context: object) -> None:
        pass


def test_an_operator_takes_them_too() -> None:
    with DAG("ops") as built:
        Nothing(task_id="op", depends_on_past=True)
    assert built.structure()["tasks"]["op"]["depends_on_past"] is True


def test_dag_options_reach_the_structure_only_when_set() -> None:
    with DAG(
        "life",
        dagrun_timeout=dt.timedelta(minutes=30),
        end_date=dt.datetime(2031, 1, 1, tzinfo=dt.UTC),
        fail_fast=True,
        is_paused_upon_creation=True,
    ) as built:
        noop()
    shape = built.structure()
    assert shape["dagrun_timeout_seconds"] == 1800.0
    assert shape["end_date"] == "2031-01-01T00:00:00+00:00"
    assert shape["fail_fast"] is True
    assert built.run_options.is_paused_upon_creation is True
    with DAG("plain") as plain:
        noop()
    keys = set(plain.structure()) | set(plain.structure()["tasks"]["noop"])
    assert not keys & {"dagrun_timeout_seconds", "end_date", "fail_fast", "depends_on_past"}


def test_a_task_ends_no_later_than_its_dag() -> None:
    with DAG("bounded", end_date=dt.datetime(2030, 6, 1)) as built:
        noop()
        noop.override(end_date="2030-01-01")()  # an ISO text, as default_args may give
        noop.override(end_date=dt.datetime(2031, 1, 1))()
    ends = {tid: spec["end_date"][:10] for tid, spec in built.structure()["tasks"].items()}
    assert ends == {"noop": "2030-06-01", "noop__1": "2030-01-01", "noop__2": "2030-06-01"}
    assert noop.options.end_date is None  # the decorator's own options are left alone


def test_a_fail_fast_dag_refuses_a_trigger_rule_that_waits_for_a_failure() -> None:
    refused = pytest.raises(DagDefinitionError, match="DAG ff: task noop: a fail_fast DAG takes")
    with refused, DAG("ff", fail_fast=True):
        noop.override(trigger_rule="all_done")()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"dagrun_timeout": dt.timedelta(0)}, "dagrun_timeout must be a positive timedelta"),
        ({"end_date": dt.date(2030, 1, 1)}, "end_date must be a datetime"),
    ],
)
def test_a_bad_dag_option_is_refused_in_one_line(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(DagDefinitionError, match=f"DAG bad: {message}"):
        DAG("bad", **arguments)  # type: ignore[arg-type]


def test_a_bad_task_option_is_refused_naming_the_task() -> None:
    with pytest.raises(DagDefinitionError, match="task t: wait_for_downstream must be True"):
        task(task_id="t", wait_for_downstream=1)(lambda: None)
