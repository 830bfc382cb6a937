"""The base of every timetable (Airflow's ``airflow.timetables.base``): a DAG folder's own too.

A timetable answers two questions for the scheduler: when is the next run due, and over which
data interval (``next_dagrun_info``); and what interval a run triggered by hand covers
(``infer_manual_data_interval``). A subclass written in a DAG folder, as Airflow's plugin
timetables are, works unchanged: it gets a ``TimeRestriction`` (the DAG's ``start_date``,
``end_date`` and ``catchup``) and the last scheduled run's ``DataInterval``, and returns a
``DagRunInfo`` (or None: no run for now). Its ``serialize`` / ``deserialize`` pair is how the
scheduler rebuilds it from the DAG's stored structure (``tradewind/timetable_store.py``).

Every datetime crossing this interface is aware. A run's logical date is its data interval's
start, as in Airflow; the run is due at ``run_after``.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

_Init = TypeVar("_Init", bound=Callable[..., None])


class InvalidTimetable(ValueError):
    """A timetable whose arguments cannot be scheduled on (AirflowTimetableInvalid)."""


def utcnow() -> dt.datetime:
    """The time the built-in timetables see (one place, so tests can set the clock)."""
    return dt.datetime.now(dt.UTC)


class DataInterval(NamedTuple):
    """The span of data a run covers, ``[start, end]``, both ends aware."""

    start: dt.datetime
    end: dt.datetime

    @classmethod
    def exact(cls, at: dt.datetime) -> DataInterval:
        """An interval of one instant: a run about a moment, not a span."""
        return cls(at, at)


class TimeRestriction(NamedTuple):
    """When runs may be: not before ``earliest``, not after ``latest`` (both inclusive); with
    ``catchup`` False, not for moments already past either."""

    earliest: dt.datetime | None
    latest: dt.datetime | None
    catchup: bool


class DagRunInfo(NamedTuple):
    """The next run a timetable asks for: due at ``run_after``, over ``data_interval``."""

    run_after: dt.datetime
    data_interval: DataInterval | None
    partition_date: dt.datetime | None = None
    partition_key: str | None = None

    @classmethod
    def exact(cls, at: dt.datetime) -> DagRunInfo:
        """A run due at ``at``, about that instant."""
        return cls(at, DataInterval.exact(at))

    @classmethod
    def interval(cls, start: dt.datetime, end: dt.datetime) -> DagRunInfo:
        """A run over ``[start, end]``, due once ``end`` has come."""
        return cls(end, DataInterval(start, end))

    @property
    def logical_date(self) -> dt.datetime | None:
        """The run's logical date: its data interval's start (Airflow's definition)."""
        return self.data_interval.start if self.data_interval else None


class Timetable:
    """What every timetable is; subclass it and define the two ``*_info``/``*_interval`` methods.

    Class attributes a subclass may change: ``description`` (shown with the DAG), ``periodic``,
    ``can_be_scheduled`` (False: never runs on its own), ``active_runs_limit`` (the most
    ``max_active_runs`` may be), ``run_ordering``.
    """

    description: str = ""
    periodic: bool = True
    can_be_scheduled: bool = True
    run_ordering: Sequence[str] = ("data_interval_end", "logical_date")
    active_runs_limit: int | None = None
    partitioned: bool = False
    #: Why the arguments were refused (``refused_at_validate``), said by ``validate``.
    invalid: str | None = None

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        """The timetable ``serialize`` described; a timetable without arguments by default."""
        return cls()

    def serialize(self) -> dict[str, Any]:
        """What ``deserialize`` needs to build this timetable again, as JSON values."""
        return {}

    def validate(self) -> None:
        """Raise ``InvalidTimetable`` when the arguments cannot be scheduled on."""
        if self.invalid is not None:
            raise InvalidTimetable(self.invalid)

    @property
    def summary(self) -> str:
        """A short name for the schedule (the class name unless a subclass says better)."""
        return type(self).__name__

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        """The data interval of a run triggered by hand at ``run_after``."""
        raise NotImplementedError

    def next_dagrun_info(
        self,
        *,
        last_automated_data_interval: DataInterval | None,
        restriction: TimeRestriction,
    ) -> DagRunInfo | None:
        """The run after the last scheduled one (None: the first), or None for no run now."""
        raise NotImplementedError

    def generate_run_id(self, *, run_type: Any, run_after: dt.datetime, **_: Any) -> str:
        """``<run type>__<run_after>``, as Airflow names a scheduled run."""
        return f"{getattr(run_type, 'value', run_type)}__{run_after.isoformat()}"


def refused_at_validate(init: _Init) -> _Init:
    """A built-in timetable's ``__init__`` whose bad arguments are said by ``validate``: the DAG
    calls it, so the one line names the DAG (a timetable is built before its DAG is)."""

    @functools.wraps(init)
    def checked(self: Timetable, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except InvalidTimetable as error:
            self.invalid = f"{type(self).__name__}: {error}"

    return checked  # type: ignore[return-value]
