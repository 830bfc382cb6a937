"""A DAG's timetable in its stored structure, and the timetable rebuilt from it.

The scheduler keeps a DAG as JSON (``DAG.structure()``), so a timetable object is stored as
``{"type": <class name>, **serialize()}`` for Tradewind's own, and a timetable class from the
DAG folder (Airflow's plugin timetables) as ``{"type": "custom", "class": "<module>:<name>",
"file": <its source file>, "data": serialize()}``. Rebuilding one takes the class from its module
when this process has imported it (the scheduler's own DAG sync imports every DAG file, and the
modules they import) and otherwise imports the file under the same module name, as the DAG
loader names it; then ``deserialize(data)``. So a class defined in a DAG file, or in a module a
DAG file imports, works with no registration.

A plain cron string, preset or timedelta keeps Tradewind's ``schedule`` text
(``tradewind/timetables.py``); a timetable object, and ``"@continuous"``, take this path.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import inspect
import json
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from tradewind import dag_context
from tradewind.timetable_base import (
    DagRunInfo,
    DataInterval,
    InvalidTimetable,
    TimeRestriction,
    Timetable,
)
from tradewind.timetable_interval import CronDataIntervalTimetable, DeltaDataIntervalTimetable
from tradewind.timetable_simple import (
    AssetOrTimeSchedule,
    ContinuousTimetable,
    EventsTimetable,
    NullTimetable,
    OnceTimetable,
)
from tradewind.timetable_trigger import (
    CronTriggerTimetable,
    DeltaTriggerTimetable,
    MultipleCronTriggerTimetable,
)
from tradewind.timezones import as_utc

BUILT_IN: dict[str, type[Timetable]] = {
    cls.__name__: cls
    for cls in (
        CronTriggerTimetable,
        CronDataIntervalTimetable,
        DeltaTriggerTimetable,
        DeltaDataIntervalTimetable,
        MultipleCronTriggerTimetable,
        EventsTimetable,
        ContinuousTimetable,
        OnceTimetable,
        NullTimetable,
    )
}


def split_schedule(schedule: Any, max_active_runs: int) -> tuple[Timetable | None, Any]:
    """A DAG's ``schedule`` as (the timetable this module stores, what remains a plain schedule:
    Tradewind's schedule text, or the assets of an ``AssetOrTimeSchedule``)."""
    if isinstance(schedule, str) and schedule == "@continuous":
        schedule = ContinuousTimetable()
    if not isinstance(schedule, Timetable):
        return None, schedule
    schedule.validate()
    if schedule.invalid is not None:  # a subclass's own validate() did not ask the base's
        raise InvalidTimetable(schedule.invalid)
    limit = schedule.active_runs_limit
    if limit is not None and max_active_runs > limit:
        raise InvalidTimetable(
            f"schedule {schedule.summary!r} runs one run at a time: "
            f"set max_active_runs={limit} (got {max_active_runs})"
        )
    if isinstance(schedule, NullTimetable):
        return None, None
    if isinstance(schedule, AssetOrTimeSchedule):
        return schedule, schedule.assets
    return schedule, None


def timetable_structure(timetable: Timetable) -> dict[str, Any]:
    """The stored form of ``timetable`` (JSON values only), with what the API and the pages
    show of it (``display``: Airflow's ``timetable_summary`` / ``_description`` / ``_periodic``)."""
    display = {
        "summary": timetable.summary,
        "description": timetable.description,
        "periodic": timetable.periodic,
    }
    return {**_stored(timetable), "display": display}


def _stored(timetable: Timetable) -> dict[str, Any]:
    if isinstance(timetable, AssetOrTimeSchedule):
        return {"type": "AssetOrTimeSchedule", "timetable": _stored(timetable.timetable)}
    cls = type(timetable)
    if BUILT_IN.get(cls.__name__) is cls:
        return {"type": cls.__name__, **timetable.serialize()}
    data = timetable.serialize()
    try:
        json.dumps(data)
    except (TypeError, ValueError):
        raise InvalidTimetable(f"{cls.__name__}.serialize() must return JSON values") from None
    source = inspect.getsourcefile(cls)
    if source is None:
        raise InvalidTimetable(f"timetable class {cls.__qualname__} has no source file")
    return {
        "type": "custom",
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "file": str(Path(source).resolve()),
        "data": data,
    }


def rebuild_timetable(stored: Mapping[str, Any]) -> Timetable:
    """The timetable ``timetable_structure`` stored; for an ``AssetOrTimeSchedule``, its time
    part (its assets are the DAG's stored asset condition)."""
    kind = stored["type"]
    if kind == "AssetOrTimeSchedule":
        return rebuild_timetable(stored["timetable"])
    if kind != "custom":
        fields = {key: value for key, value in stored.items() if key not in ("type", "display")}
        return BUILT_IN[kind].deserialize(fields)
    cls = _custom_class(stored["class"], stored["file"])
    return cls.deserialize(dict(stored["data"]))


def _custom_class(path: str, file: str) -> type[Timetable]:
    module_name, _, qualname = path.partition(":")
    module = sys.modules.get(module_name) or _import_file(module_name, file)
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, Timetable)):
        raise InvalidTimetable(f"{file} no longer defines the timetable class {qualname}")
    return found


def _import_file(module_name: str, file: str) -> ModuleType:
    """Import ``file`` as ``module_name``; the DAGs a DAG file builds on the way are dropped."""
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None or not Path(file).is_file():
        raise InvalidTimetable(f"cannot import the timetable's module {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    start = len(dag_context.CREATED)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the DAG file's own warnings were shown at its load
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    finally:
        del dag_context.CREATED[start:]
    return module


def next_run(
    timetable: Timetable, last: DataInterval | None, restriction: TimeRestriction
) -> DagRunInfo | None:
    """``timetable.next_dagrun_info``, with pendulum datetimes for a DAG folder's own class
    (Airflow hands it those: ``.add()``, ``.date()``...) when pendulum is installed, and the
    answer in plain UTC."""
    if BUILT_IN.get(type(timetable).__name__) is not type(timetable):
        last = DataInterval(*map(_pendulum, last)) if last else None
        restriction = TimeRestriction(
            _pendulum(restriction.earliest), _pendulum(restriction.latest), restriction.catchup
        )
    info = timetable.next_dagrun_info(last_automated_data_interval=last, restriction=restriction)
    if info is None:
        return None
    interval = info.data_interval
    plain = DataInterval(as_utc(interval.start), as_utc(interval.end)) if interval else None
    return DagRunInfo(as_utc(info.run_after), plain, info.partition_date, info.partition_key)


def intervals_between(
    timetable: Timetable, start: dt.datetime, end: dt.datetime, most: int
) -> list[DataInterval]:
    """The data intervals of the runs ``timetable`` asks for from ``start`` to ``end`` (with
    catchup, as a backfill asks); ``InvalidTimetable`` past ``most`` of them."""
    restriction = TimeRestriction(start, end, True)
    found: list[DataInterval] = []
    info = next_run(timetable, None, restriction)
    while info is not None and info.data_interval is not None:
        if len(found) >= most:
            raise InvalidTimetable(f"the range holds more than {most} runs")
        found.append(info.data_interval)
        info = next_run(timetable, info.data_interval, restriction)
    return found


def _pendulum(moment: Any) -> Any:
    if moment is None or importlib.util.find_spec("pendulum") is None:
        return moment
    import pendulum

    return pendulum.instance(moment)


def is_due(info: DagRunInfo | None, now: dt.datetime) -> bool:
    return info is not None and info.run_after <= now
