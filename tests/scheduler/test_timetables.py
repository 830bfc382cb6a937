"""Data intervals of cron, preset and timedelta schedules, with and without catchup."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from tradewind import DAG, DagDefinitionError
from tradewind.timetables import ScheduleSpec, next_interval, parse_schedule

UTC = dt.UTC


def at(hour: int, minute: int = 0, day: int = 1) -> dt.datetime:
    return dt.datetime(2024, 1, day, hour, minute, tzinfo=UTC)


def intervals(spec: ScheduleSpec, now: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
    """Every interval the scheduler would create by ``now``, one after the other."""
    done: list[tuple[dt.datetime, dt.datetime]] = []
    nxt = next_interval(spec, None, now)
    while nxt is not None and nxt[1] <= now:
        done.append(nxt)
        nxt = next_interval(spec, nxt[1], now)
    return done


def test_an_hourly_cron_with_catchup_runs_every_interval_since_start_date() -> None:
    spec = ScheduleSpec("0 * * * *", at(0, 10), catchup=True)
    assert intervals(spec, at(3, 30)) == [(at(1), at(2)), (at(2), at(3))]
    assert next_interval(spec, at(3), at(3, 30)) == (at(3), at(4))  # due at 04:00


def test_without_catchup_only_the_latest_ended_interval_runs() -> None:
    spec = ScheduleSpec("@hourly", at(0), catchup=False)
    assert intervals(spec, at(5, 59)) == [(at(4), at(5))]
    # The scheduler was down from 06:00 to 09:30: the missed intervals are skipped.
    assert next_interval(spec, at(5), at(9, 30)) == (at(8), at(9))


def test_presets_are_cron_expressions() -> None:
    spec = ScheduleSpec("@daily", at(0, day=1), catchup=True)
    assert intervals(spec, at(12, day=3)) == [
        (at(0, day=1), at(0, day=2)),
        (at(0, day=2), at(0, day=3)),
    ]


def test_a_timedelta_counts_from_start_date() -> None:
    text = parse_schedule(dt.timedelta(minutes=45))
    assert text == "interval:2700"
    spec = ScheduleSpec(text, at(0, 10), catchup=True)
    assert intervals(spec, at(2)) == [(at(0, 10), at(0, 55)), (at(0, 55), at(1, 40))]


def test_without_start_date_nothing_runs_for_time_before_the_dag_was_scheduled() -> None:
    spec = ScheduleSpec("@hourly", None, catchup=True)
    assert next_interval(spec, None, at(3, 30)) == (at(4), at(5))
    delta = ScheduleSpec("interval:600", None, catchup=False)
    assert next_interval(delta, None, at(3, 30)) == (at(3, 30), at(3, 40))
    assert next_interval(delta, at(3, 40), at(3, 41)) == (at(3, 40), at(3, 50))


def test_once_runs_once() -> None:
    spec = ScheduleSpec("@once", at(2), catchup=False)
    assert next_interval(spec, None, at(3)) == (at(2), at(2))
    assert next_interval(spec, at(2), at(3)) is None


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("61 * * * *", "invalid cron expression '61 * * * *'"),
        ("* * *", "invalid cron expression"),
        ("@fortnightly", "unknown schedule preset '@fortnightly'"),
        (dt.timedelta(0), "schedule interval must be positive"),
        (42, "schedule must be a cron string or a timedelta"),
    ],
)
def test_a_bad_schedule_is_a_dag_definition_error(schedule: object, message: str) -> None:
    with pytest.raises(DagDefinitionError, match=message.replace("*", r"\*")) as raised:
        DAG("bad", schedule=schedule)  # type: ignore[arg-type]
    assert str(raised.value).startswith("DAG bad: ")


def test_the_schedule_is_stored_in_the_dag_structure() -> None:
    built = DAG("hourly", schedule="@hourly", start_date=dt.datetime(2024, 1, 1), catchup=True)
    shape = built.structure()
    assert (shape["schedule"], shape["start_date"], shape["catchup"]) == (
        "@hourly",
        "2024-01-01T00:00:00+00:00",
        True,
    )


def test_a_cron_string_is_read_in_the_start_dates_timezone() -> None:
    amsterdam = dt.datetime(2024, 1, 1, tzinfo=ZoneInfo("Europe/Amsterdam"))
    built = DAG("local", schedule="0 0 * * *", start_date=amsterdam, catchup=True)
    assert built.structure()["timezone"] == "Europe/Amsterdam"
    spec = ScheduleSpec("0 0 * * *", amsterdam, catchup=True, timezone="Europe/Amsterdam")
    # Amsterdam's midnights are 23:00 UTC in winter; the points are kept in UTC.
    assert intervals(spec, at(12, day=3)) == [
        (dt.datetime(2023, 12, 31, 23, tzinfo=UTC), at(23)),
        (at(23), at(23, day=2)),
    ]
    # A UTC start date, or a timedelta schedule, adds nothing: their version hashes stay.
    assert "timezone" not in DAG("utc", schedule="@daily", start_date=at(0)).structure()
    assert (
        "timezone"
        not in DAG("delta", schedule=dt.timedelta(hours=1), start_date=amsterdam).structure()
    )


def test_pendulum_start_dates_load_as_airflow_dags_write_them() -> None:
    pendulum = pytest.importorskip("pendulum")
    utc = DAG("p_utc", schedule="@daily", start_date=pendulum.datetime(2021, 1, 1, tz="UTC"))
    assert utc.structure()["start_date"] == "2021-01-01T00:00:00+00:00"
    assert "timezone" not in utc.structure()
    local = pendulum.datetime(2021, 1, 1, tz="Europe/Amsterdam")
    assert DAG("p_local", schedule="@daily", start_date=local).structure()["timezone"] == (
        "Europe/Amsterdam"
    )
