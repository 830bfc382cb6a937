"""Tradewind: Airflow-style DAGs on a fleet of Celery workers.

What DAG authors import; the names follow Airflow 3's TaskFlow API (``airflow.sdk``), so a DAG
file written for Airflow runs with ``airflow.sdk`` replaced by ``tradewind``. A name of
``airflow.sdk`` that Tradewind does not have yet fails the import naming the missing feature
(``tradewind/unsupported.py``), rather than a bare "cannot import name".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tradewind import bash as _bash
from tradewind import sensors as _sensors
from tradewind import virtualenv as _venv
from tradewind.asset_decorator import asset
from tradewind.assets import Asset, AssetAlias, AssetAll, AssetAny, AssetWatcher, Metadata
from tradewind.bash_operator import BashOperator
from tradewind.branching import BranchError
from tradewind.connections import Connection, Variable, mask_secret
from tradewind.context import get_current_context
from tradewind.dag import DAG, dag
from tradewind.dependencies import EdgeModifier, Label, chain, cross_downstream
from tradewind.exceptions import (
    AirflowFailException,
    AirflowSkipException,
    DagDefinitionError,
    FailTask,
    SkipTask,
)
from tradewind.operators import BaseOperator
from tradewind.params import Param, ParamValidationError
from tradewind.partition_windows import (
    DayWindow,
    MinimumCount,
    MonthWindow,
    SegmentWindow,
    WaitForAll,
    WeekWindow,
    Window,
)
from tradewind.partitions import (
    AllowedKeyMapper,
    CronPartitionTimetable,
    FanOutMapper,
    FixedKeyMapper,
    IdentityMapper,
    PartitionedAssetTimetable,
    PartitionedAtRuntime,
    PartitionMapper,
    ProductMapper,
    RollupMapper,
    StartOfDayMapper,
    StartOfHourMapper,
    StartOfMonthMapper,
    StartOfWeekMapper,
    StartOfYearMapper,
)
from tradewind.priority import PriorityWeightStrategy, WeightRule
from tradewind.retry_policy import ExceptionRetryPolicy, RetryAction, RetryRule
from tradewind.sensor_operator import BaseSensorOperator
from tradewind.sensors import PokeReturnValue
from tradewind.setup_teardown import setup, teardown
from tradewind.standard import decorators as _standard_decorators  # noqa: F401 (registers)
from tradewind.state_store import NEVER_EXPIRE
from tradewind.task import task
from tradewind.task_group import TaskGroup, task_group
from tradewind.timetable_interval import CronDataIntervalTimetable, DeltaDataIntervalTimetable
from tradewind.timetable_simple import AssetOrTimeSchedule, EventsTimetable
from tradewind.timetable_trigger import (
    CronTriggerTimetable,
    DeltaTriggerTimetable,
    MultipleCronTriggerTimetable,
)
from tradewind.trigger_rules import TriggerRule
from tradewind.triggers.base import BaseEventTrigger, BaseTrigger, TaskDeferred, TriggerEvent
from tradewind.unsupported import missing_feature

if TYPE_CHECKING:
    from tradewind.object_storage_path import ObjectStoragePath

# The task kinds Tradewind has, each in a module of its own (over task.py's refusals).
task.bash, task.sensor, task.virtualenv = _bash.bash, _sensors.sensor, _venv.virtualenv  # type: ignore[attr-defined]

__all__ = [
    "DAG",
    "NEVER_EXPIRE",
    "AirflowFailException",
    "AirflowSkipException",
    "AllowedKeyMapper",
    "Asset",
    "AssetAlias",
    "AssetAll",
    "AssetAny",
    "AssetOrTimeSchedule",
    "AssetWatcher",
    "BaseEventTrigger",
    "BaseOperator",
    "BaseSensorOperator",
    "BaseTrigger",
    "BashOperator",
    "BranchError",
    "Connection",
    "CronDataIntervalTimetable",
    "CronPartitionTimetable",
    "CronTriggerTimetable",
    "DagDefinitionError",
    "DayWindow",
    "DeltaDataIntervalTimetable",
    "DeltaTriggerTimetable",
    "EdgeModifier",
    "EventsTimetable",
    "ExceptionRetryPolicy",
    "FailTask",
    "FanOutMapper",
    "FixedKeyMapper",
    "IdentityMapper",
    "Label",
    "Metadata",
    "MinimumCount",
    "MonthWindow",
    "MultipleCronTriggerTimetable",
    "ObjectStoragePath",
    "Param",
    "ParamValidationError",
    "PartitionMapper",
    "PartitionedAssetTimetable",
    "PartitionedAtRuntime",
    "PokeReturnValue",
    "PriorityWeightStrategy",
    "ProductMapper",
    "RetryAction",
    "RetryRule",
    "RollupMapper",
    "SegmentWindow",
    "SkipTask",
    "StartOfDayMapper",
    "StartOfHourMapper",
    "StartOfMonthMapper",
    "StartOfWeekMapper",
    "StartOfYearMapper",
    "TaskDeferred",
    "TaskGroup",
    "TriggerEvent",
    "TriggerRule",
    "Variable",
    "WaitForAll",
    "WeekWindow",
    "WeightRule",
    "Window",
    "asset",
    "chain",
    "cross_downstream",
    "dag",
    "get_current_context",
    "mask_secret",
    "setup",
    "task",
    "task_group",
    "teardown",
]


def __getattr__(name: str) -> Any:
    if name == "ObjectStoragePath":  # imported on first use: fsspec and upath cost a DAG file
        from tradewind.object_storage_path import ObjectStoragePath

        return ObjectStoragePath
    # `from tradewind import X` of a name Tradewind lacks: say which feature is missing.
    raise missing_feature(name, __name__)
