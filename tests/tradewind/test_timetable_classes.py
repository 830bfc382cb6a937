"""The runs Airflow's timetables ask for: with and without catchup, to the end of the range, in a
timezone, and the same after being stored and rebuilt."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from zoneinfo import ZoneInfo

import pytest
from dateutil.relativedelta import relativedelta

from tradewind import (
    DAG,
    CronDataIntervalTimetable,
    CronTriggerTimetable,
    DagDefinitionError,
    DeltaDataIntervalTimetable,
    DeltaTriggerTimetable,
    EventsTimetable,
    MultipleCronTriggerTimetable,
)
from tradewind import timetable_base as base
from tradewind.timetable_base import DataInterval, TimeRestriction, Timetable
from tradewind.timetable_simple import ContinuousTimetable, OnceTimetable
from tradewind.timetable_store import next_run, rebuild_timetable, timetable_structure

UTC = dt.UTC
Run = tuple[dt.datetime, dt.datetime, dt.datetime]  # (data interval start, end, run_after)


def at(hour: int, minute: int = 0, day: int = 1, month: int = 1) -> dt.datetime:
    return dt.datetime(2024, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[dt.datetime], None]:
    """``clock(moment)``: the time the timetables see."""

    def set_to(moment: dt.datetime) -> None:
        monkeypatch.setattr(base, "utcnow", lambda: moment)

    return set_to


def runs(
    timetable: Timetable,
    earliest: dt.datetime | None,
    catchup: bool,
    now: dt.datetime,
    latest: dt.datetime | None = None,
) -> tuple[list[Run], Run | None]:
    """The runs due by ``now`` one after the other, as the scheduler asks, and the next one."""
    restriction = TimeRestriction(earliest, latest, catchup)
    done: list[Run] = []
    info = next_run(timetable, None, restriction)
    while info is not None and info.run_after <= now:
        assert info.data_interval is not None
        done.append((*info.data_interval, info.run_after))
        info = next_run(timetable, info.data_interval, restriction)
    if info is None or info.data_interval is None:
        return done, None
    return done, (*info.data_interval, info.run_after)


def both(timetable: Timetable) -> list[Timetable]:
    """The timetable, and the one rebuilt from its stored form: they must ask for the same."""
    return [timetable, rebuild_timetable(timetable_structure(timetable))]


def point(moment: dt.datetime) -> Run:
    return (moment, moment, moment)


@pytest.mark.parametrize("which", [0, 1])
def test_cron_trigger_with_catchup_runs_at_every_point_since_start_date(
    clock: Callable[[dt.datetime], None], which: int
) -> None:
    clock(at(3, 30))
    table = both(CronTriggerTimetable("0 * * * *", timezone="UTC"))[which]
    done, following = runs(table, at(0, 10), True, at(3, 30))
    assert done == [point(at(1)), point(at(2)), point(at(3))]
    assert following == point(at(4))


def test_cron_trigger_without_catchup_runs_the_latest_point_only(
    clock: Callable[[dt.datetime], None],
) -> None:
    clock(at(5, 59))
    table = CronTriggerTimetable("@hourly", timezone="UTC", interval=dt.timedelta(hours=1))
    done, following = runs(table, at(0), False, at(5, 59))
    # The interval reaches back an hour: the logical date (its start) is an hour before the run.
    assert done == [(at(4), at(5), at(5))]
    assert following == (at(5), at(6), at(6))


def test_cron_trigger_stops_at_the_end_of_the_range(clock: Callable[[dt.datetime], None]) -> None:
    clock(at(6))
    table = CronTriggerTimetable("0 * * * *", timezone="UTC")
    done, following = runs(table, at(0), True, at(6), latest=at(2))
    assert done == [point(at(0)), point(at(1)), point(at(2))]
    assert following is None


def test_cron_trigger_reads_its_cron_in_its_timezone(clock: Callable[[dt.datetime], None]) -> None:
    clock(at(12, day=3))
    for table in both(CronTriggerTimetable("0 0 * * *", timezone="Europe/Amsterdam")):
        done, _ = runs(table, at(0), True, at(12, day=3))
        # Amsterdam's midnight is 23:00 UTC in winter.
        assert done == [point(at(23, day=1)), point(at(23, day=2))]


def test_cron_trigger_without_start_date_runs_a_recent_point_at_once(
    clock: Callable[[dt.datetime], None],
) -> None:
    clock(at(10, 3))
    recent = CronTriggerTimetable("0 * * * *", timezone="UTC")  # within 5 min (of an hour's 6)
    assert runs(recent, None, True, at(10, 3))[0] == [point(at(10))]
    clock(at(10, 30))
    assert runs(recent, None, True, at(10, 30))[0] == []  # too late: the next point is 11:00
    always = CronTriggerTimetable("0 * * * *", timezone="UTC", run_immediately=True)
    assert runs(always, None, True, at(10, 30))[0] == [point(at(10))]
    within = CronTriggerTimetable(
        "0 * * * *", timezone="UTC", run_immediately=dt.timedelta(minutes=20)
    )
    assert runs(within, None, True, at(10, 30))[1] == point(at(11))


def test_cron_data_interval_runs_each_period_once_it_has_ended(
    clock: Callable[[dt.datetime], None],
) -> None:
    clock(at(12, day=3))
    for table in both(CronDataIntervalTimetable("@daily", "UTC")):
        done, following = runs(table, at(0), True, at(12, day=3))
        assert done == [
            (at(0), at(0, day=2), at(0, day=2)),
            (at(0, day=2), at(0, day=3), at(0, day=3)),
        ]
        assert following == (at(0, day=3), at(0, day=4), at(0, day=4))


def test_cron_data_interval_without_catchup_and_to_the_end_of_range(
    clock: Callable[[dt.datetime], None],
) -> None:
    clock(at(12, day=5))
    table = CronDataIntervalTimetable("0 0 * * *", "UTC")
    assert runs(table, at(0), False, at(12, day=5))[0] == [
        (at(0, day=4), at(0, day=5), at(0, day=5))
    ]
    done, following = runs(table, at(0), True, at(12, day=5), latest=at(0, day=2))
    assert [run[0] for run in done] == [at(0), at(0, day=2)]  # a period starting after it: none
    assert following is None
    assert table.infer_manual_data_interval(run_after=at(1, day=3)) == (at(0, day=2), at(0, day=3))


def test_delta_data_interval_counts_from_start_date(clock: Callable[[dt.datetime], None]) -> None:
    clock(at(2))
    for table in both(DeltaDataIntervalTimetable(dt.timedelta(minutes=45))):
        done, _ = runs(table, at(0, 10), True, at(2))
        assert done == [(at(0, 10), at(0, 55), at(0, 55)), (at(0, 55), at(1, 40), at(1, 40))]
    # Without catchup: the latest hour that has ended (on the epoch's grid of the delta).
    clock(at(5, 30))
    done, _ = runs(DeltaDataIntervalTimetable(dt.timedelta(hours=1)), at(0), False, at(5, 30))
    assert done == [(at(4), at(5), at(5))]


def test_a_monthly_relativedelta_keeps_the_calendar(clock: Callable[[dt.datetime], None]) -> None:
    clock(at(0, day=1, month=4))
    for table in both(DeltaDataIntervalTimetable(relativedelta(months=1))):
        done, _ = runs(table, at(0, day=1), True, at(0, day=1, month=4))
        assert [run[2] for run in done] == [at(0, day=1, month=m) for m in (2, 3, 4)]


def test_delta_trigger_runs_every_delta(clock: Callable[[dt.datetime], None]) -> None:
    clock(at(1, 15))
    for table in both(DeltaTriggerTimetable(dt.timedelta(minutes=30))):
        done, following = runs(table, at(0, 10), True, at(1, 15))
        assert done == [point(at(0, 10)), point(at(0, 40)), point(at(1, 10))]
        assert following == point(at(1, 40))
    # Without a start date the first run is now.
    assert runs(DeltaTriggerTimetable(dt.timedelta(hours=1)), None, False, at(1, 15))[0] == [
        point(at(1, 15))
    ]


def test_multiple_crons_run_at_the_points_of_each_once(
    clock: Callable[[dt.datetime], None],
) -> None:
    clock(at(4, 50))
    for table in both(MultipleCronTriggerTimetable("0 */2 * * *", "30 * * * *", timezone="UTC")):
        done, following = runs(table, at(1), True, at(4, 50))
        assert [run[2] for run in done] == [
            at(1, 30),
            at(2),
            at(2, 30),
            at(3, 30),
            at(4),
            at(4, 30),
        ]
        assert following == point(at(5, 30))
    shared = MultipleCronTriggerTimetable("0 * * * *", "0 */2 * * *", timezone="UTC")
    assert [run[2] for run in runs(shared, at(0), True, at(2))[0]] == [at(0), at(1), at(2)]
    # Without catchup: the latest point already passed, of either expression.
    assert [r[2] for r in runs(table, at(1), False, at(4, 50))[0]] == [at(4, 30)]


def test_events_run_at_each_event_in_order(clock: Callable[[dt.datetime], None]) -> None:
    events = [at(0, day=3), at(0, day=1), at(0, day=2)]
    clock(at(12, day=5))
    for table in both(EventsTimetable(events, description="three days")):
        done, following = runs(table, None, True, at(12, day=5))
        assert done == [point(at(0, day=d)) for d in (1, 2, 3)]
        assert following is None
        assert table.summary == "three days"
    # Without catchup the events already past are skipped; and none after the end of the range.
    clock(at(12, day=1))
    table = EventsTimetable(events)
    assert runs(table, None, False, at(12, day=1))[1] == point(at(0, day=2))
    assert runs(table, None, True, at(12, day=5), latest=at(0, day=2))[0] == [
        point(at(0, day=1)),
        point(at(0, day=2)),
    ]


def test_events_restricted_to_events_give_a_manual_run_the_latest_event() -> None:
    table = EventsTimetable([at(0, day=1), at(0, day=3)], restrict_to_events=True)
    assert table.infer_manual_data_interval(run_after=at(5, day=2)) == DataInterval.exact(at(0))
    assert table.infer_manual_data_interval(run_after=at(0) - dt.timedelta(days=1)) == (
        DataInterval.exact(at(0))
    )
    free = EventsTimetable([at(0, day=1)])
    assert free.infer_manual_data_interval(run_after=at(5, day=2)) == DataInterval.exact(
        at(5, day=2)
    )


def test_continuous_asks_for_the_next_run_at_once(clock: Callable[[dt.datetime], None]) -> None:
    clock(at(3))
    table = ContinuousTimetable()
    first = next_run(table, None, TimeRestriction(at(1), None, False))
    assert first is not None and first.data_interval == (at(1), at(3)) and first.run_after == at(3)
    clock(at(3, 5))
    second = next_run(table, first.data_interval, TimeRestriction(at(1), None, False))
    assert second is not None and second.data_interval == (at(3), at(3, 5))
    assert next_run(table, first.data_interval, TimeRestriction(at(1), at(3), False)) is None


def test_once_runs_once_at_start_date(clock: Callable[[dt.datetime], None]) -> None:
    clock(at(5))
    assert runs(OnceTimetable(), at(2), False, at(5)) == ([point(at(2))], None)


def test_a_dag_stores_its_timetable_and_refuses_a_bad_one_in_one_line() -> None:
    built = DAG("tt", schedule=CronTriggerTimetable("@daily", timezone="Asia/Tokyo"))
    assert built.structure()["timetable"] == {
        "type": "CronTriggerTimetable",
        "expression": "0 0 * * *",
        "timezone": "Asia/Tokyo",
        "interval": 0.0,
        "run_immediately": False,
        "display": {"summary": "0 0 * * *", "description": "0 0 * * *", "periodic": True},
    }
    continuous = DAG("cont", schedule="@continuous", max_active_runs=1).structure()
    assert continuous["timetable"]["type"] == "ContinuousTimetable"
    assert continuous["timetable"]["display"]["summary"] == "@continuous"
    refused = {
        "continuous": lambda: DAG("c", schedule="@continuous"),
        "cron": lambda: DAG("b", schedule=CronTriggerTimetable("61 * * * *", timezone="UTC")),
        "zone": lambda: DAG("z", schedule=CronDataIntervalTimetable("@daily", "Mars/Olympus")),
        "json": lambda: DAG("j", schedule=Unstorable()),
    }
    lines = {}
    for name, build in refused.items():
        with pytest.raises(DagDefinitionError) as raised:
            build()
        lines[name] = str(raised.value)
    assert lines == {
        "continuous": "DAG c: schedule '@continuous' runs one run at a time: "
        "set max_active_runs=1 (got 16)",
        "cron": "DAG b: CronTriggerTimetable: invalid cron expression '61 * * * *' (five fields)",
        "zone": "DAG z: CronDataIntervalTimetable: unknown timezone 'Mars/Olympus' (an IANA name)",
        "json": "DAG j: Unstorable.serialize() must return JSON values",
    }


class Unstorable(Timetable):
    def serialize(self) -> dict[str, object]:
        return {"when": object()}


def test_a_timezone_is_kept_as_given(clock: Callable[[dt.datetime], None]) -> None:
    pendulum = pytest.importorskip("pendulum")
    for zone, name in [
        (pendulum.timezone("Europe/Paris"), "Europe/Paris"),
        (ZoneInfo("America/New_York"), "America/New_York"),
        (dt.timezone(dt.timedelta(hours=-3, minutes=-30)), "-03:30"),
        (pendulum.UTC, "UTC"),
    ]:
        stored = timetable_structure(CronTriggerTimetable("0 12 * * *", timezone=zone))
        assert stored["timezone"] == name
        clock(at(13))
        first = next_run(rebuild_timetable(stored), None, TimeRestriction(None, None, True))
        assert first is not None and first.run_after.astimezone(zone).hour == 12
