"""``AirflowPlugin``: the base class of Airflow's plugins, so that a DAG folder's plugin modules
import. Tradewind needs no registration: a timetable, macro or operator a plugin lists is used by
importing it from the DAG file, which is how DAG files already reach it."""

from __future__ import annotations

from typing import Any, ClassVar


class AirflowPlugin:
    name: ClassVar[str] = ""
    timetables: ClassVar[list[Any]] = []
    macros: ClassVar[list[Any]] = []
    listeners: ClassVar[list[Any]] = []
    priority_weight_strategies: ClassVar[list[Any]] = []
