"""The standard provider's EmptyOperator, LatestOnlyOperator, BranchDateTimeOperator and
BranchDayOfWeekOperator, and the task arguments every operator and ``@task`` takes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tradewind import DAG, BaseSensorOperator, DagDefinitionError, task
from tradewind.spellings import Airflow2Spelling
from tradewind.standard.datetime_branch import (
    BranchDateTimeOperator,
    BranchDayOfWeekOperator,
    target_times_as_dates,
)
from tradewind.standard.empty import DummyOperator, EmptyOperator, SmoothOperator
from tradewind.standard.latest_only import LatestOnlyOperator
from tradewind.standard.options import run_execute_callbacks
from tradewind.standard.weekday import WeekDay

from .standard_helpers import context_of

UTC = dt.UTC


def test_an_empty_operator_does_nothing_and_dummy_is_its_airflow_2_name() -> None:
    with DAG("empty"):
        empty = EmptyOperator(task_id="e")
        with pytest.warns(Airflow2Spelling, match=r"DummyOperator \(Airflow 3: EmptyOperator\)"):
            DummyOperator(task_id="d")

    assert empty.execute(context_of(empty)) is None


def test_smooth_operator_logs_its_link(capsys: pytest.CaptureFixture[str]) -> None:
    with DAG("others"):
        smooth = SmoothOperator(task_id="s")

    smooth.execute(context_of(smooth))
    assert "Smooth Operator: https://" in capsys.readouterr().out


def latest_only_dag(schedule: Any) -> LatestOnlyOperator:
    with DAG("latest", schedule=schedule, start_date=dt.datetime(2021, 1, 1, tzinfo=UTC)):
        latest = LatestOnlyOperator(task_id="latest")
        latest >> [EmptyOperator(task_id="a"), EmptyOperator(task_id="b")]
    return latest


def test_latest_only_lets_a_run_by_hand_go_on() -> None:
    latest = latest_only_dag("@daily")
    for run_type in ("manual", "test"):
        assert latest.execute(context_of(latest, run_type)) == ["a", "b"]


def test_latest_only_skips_a_scheduled_run_past_its_window_and_lets_the_latest_go_on() -> None:
    latest = latest_only_dag(dt.timedelta(hours=4))
    now = dt.datetime.now(UTC)
    old = (dt.datetime(2021, 1, 1, tzinfo=UTC), dt.datetime(2021, 1, 1, 4, tzinfo=UTC))
    start = dt.datetime(2021, 1, 1, tzinfo=UTC) + (now - dt.datetime(2021, 1, 1, tzinfo=UTC)) // (
        dt.timedelta(hours=4)
    ) * dt.timedelta(hours=4)
    current = (start - dt.timedelta(hours=4), start)  # the interval that ended last

    assert latest.execute(context_of(latest, "scheduled", old[1], old)) == []
    assert latest.execute(context_of(latest, "scheduled", current[1], current)) == ["a", "b"]


def test_latest_only_of_a_dag_without_a_schedule_always_goes_on() -> None:
    latest = latest_only_dag(None)
    assert latest.execute(context_of(latest, "scheduled")) == ["a", "b"]


def date_branch(**kwargs: Any) -> BranchDateTimeOperator:
    with DAG("dates", start_date=dt.datetime(2021, 1, 1, tzinfo=UTC)):
        return BranchDateTimeOperator(
            task_id="when",
            follow_task_ids_if_true="yes",
            follow_task_ids_if_false=["no"],
            use_task_logical_date=True,
            **kwargs,
        )


@pytest.mark.parametrize(
    ("lower", "upper", "chosen"),
    [
        (dt.time(11), dt.time(13), "yes"),
        (dt.time(13), dt.time(14), ["no"]),
        (dt.time(11), dt.time(1), "yes"),  # across midnight: the upper is the next day
        (None, dt.datetime(2026, 1, 5, 11, tzinfo=UTC), ["no"]),
        (dt.datetime(2026, 1, 5, 11), None, "yes"),  # naive: in the DAG's zone
    ],
)
def test_a_date_branch_compares_the_logical_date_with_its_bounds(
    lower: Any, upper: Any, chosen: Any
) -> None:
    operator = date_branch(target_lower=lower, target_upper=upper)
    assert operator.execute(context_of(operator)) == chosen  # logical date: 2026-01-05 12:00


def test_a_date_branch_without_bounds_is_refused() -> None:
    with pytest.raises(DagDefinitionError, match="target_lower and target_upper are both None"):
        date_branch(target_lower=None, target_upper=None)


def test_time_bounds_are_put_on_the_moments_date() -> None:
    base = dt.datetime(2026, 1, 5, 12, tzinfo=UTC)
    lower, upper = target_times_as_dates(base, dt.time(23), dt.time(1))
    assert (lower, upper) == (
        dt.datetime(2026, 1, 5, 23, tzinfo=UTC),
        dt.datetime(2026, 1, 6, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("week_day", "chosen"),
    [("monday", "yes"), (WeekDay.MONDAY, "yes"), ({"Saturday", WeekDay.SUNDAY}, "no")],
)
def test_a_day_branch_follows_the_logical_dates_day(week_day: Any, chosen: str) -> None:
    with DAG("days"):
        operator = BranchDayOfWeekOperator(
            task_id="day",
            week_day=week_day,
            follow_task_ids_if_true="yes",
            follow_task_ids_if_false="no",
            use_task_logical_date=True,
        )
    assert operator.execute(context_of(operator)) == chosen


def test_a_bad_week_day_is_refused_in_one_line() -> None:
    with DAG("days"), pytest.raises(DagDefinitionError, match="week_day: Invalid Week Day"):
        BranchDayOfWeekOperator(
            task_id="day",
            week_day="Funday",
            follow_task_ids_if_true="a",
            follow_task_ids_if_false="b",
        )


class Waits(BaseSensorOperator):
    def poke(self, context: dict[str, Any]) -> bool:
        return True


def test_deferrable_true_is_refused_where_nothing_can_defer() -> None:
    with DAG("defer"):
        Waits(task_id="not_deferred", deferrable=False)
        with pytest.raises(DagDefinitionError, match="Waits w: deferrable=True is not supported"):
            Waits(task_id="w", deferrable=True)
    with pytest.raises(DagDefinitionError, match="default_args: deferrable is not supported"):
        DAG("defer_all", default_args={"deferrable": True})


def test_the_doc_fields_are_kept_as_the_tasks_doc_md() -> None:
    with DAG("docs") as built:
        EmptyOperator(task_id="e", doc_md="# Title", doc_json='{"a": 1}', doc="plain")

    assert built.structure()["tasks"]["e"]["doc_md"] == (
        '# Title\n\n```\nplain\n```\n\n```json\n{"a": 1}\n```'
    )


def test_bad_task_arguments_are_refused_in_one_line() -> None:
    with DAG("bad"):
        with pytest.raises(DagDefinitionError, match="do_xcom_push must be True or False"):
            EmptyOperator(task_id="a", do_xcom_push="no")
        with pytest.raises(DagDefinitionError, match="on_execute_callback must be a callable"):
            EmptyOperator(task_id="b", on_execute_callback=[print, 3])
        with pytest.raises(DagDefinitionError, match="doc_yaml must be a string"):
            EmptyOperator(task_id="c", doc_yaml=3)


def test_owner_links_are_checked_and_kept_with_the_dag() -> None:
    with DAG("owned", owner_links={"ops": "mailto:ops@example.com"}) as built:
        EmptyOperator(task_id="e")

    assert built.structure()["owner_links"] == {"ops": "mailto:ops@example.com"}
    assert "owner_links" not in DAG("plain").structure()
    with pytest.raises(DagDefinitionError, match=r"owner_links\['ops'\] must be an http"):
        DAG("bad_links", owner_links={"ops": "ftp://x"})


def test_the_execute_callbacks_run_in_order_and_a_broken_one_is_only_logged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[str] = []

    def broken(context: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    @task(on_execute_callback=[lambda c: seen.append(c["ds"]), broken, lambda c: seen.append("2")])
    def work() -> None:
        pass

    with DAG("cb") as built:
        work()

    run_execute_callbacks(built.get_task("work").options, {"ds": "1"})
    assert seen == ["1", "2"]
    assert "on_execute_callback failed" in capsys.readouterr().err


def test_an_operators_task_option_may_be_set_after_it_is_made() -> None:
    with DAG("later") as built:
        empty = EmptyOperator(task_id="e")
        empty.trigger_rule = "none_failed"
        empty.doc_md = "later"

    assert empty.trigger_rule == "none_failed"
    assert built.structure()["tasks"]["e"]["trigger_rule"] == "none_failed"
    assert built.structure()["tasks"]["e"]["doc_md"] == "later"
    with pytest.raises(DagDefinitionError, match="trigger_rule 'sometimes' is not one of"):
        empty.trigger_rule = "sometimes"
