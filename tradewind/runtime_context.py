"""The context a running task gets, with Airflow 3's keys: ``ti``, ``dag_run``, ``params``, the
dates (``ds``, ``ts``...), ``conn`` and ``var``, ``task``, ``dag``, ``task_state_store``.

Built in the task process from what its supervisor sent (``TaskDetails``); every lookup it offers
(XComs, variables, connections, the state store) is a request to that supervisor, never SQL.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from tradewind.connections import Connection, Variable
from tradewind.context import RuntimeTaskInstance, SupervisorClient
from tradewind.context_keys import context_keys
from tradewind.params import Param
from tradewind.state_store import TaskStateStore


@dataclass(frozen=True)
class DagRunInfo:
    """``dag_run``: the run this try belongs to (read ``dag_run.conf`` or ``dag_run["conf"]``)."""

    dag_id: str
    run_id: str
    run_type: str
    conf: dict[str, Any] = field(default_factory=dict)
    logical_date: dt.datetime | None = None
    data_interval_start: dt.datetime | None = None
    data_interval_end: dt.datetime | None = None
    # The partition the run is: stored for a partitioned DAG's run (scheduler/partition_runs.py),
    # derived for a CronPartitionTimetable DAG's scheduled one (tradewind/asset_events.py).
    partition_key: str | None = None
    partition_date: dt.datetime | None = None

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


class _Values:
    """``var.value.key`` / ``var.json.key``, and ``.get(key, default)``, as in templates."""

    def __init__(self, deserialize_json: bool) -> None:
        self._json = deserialize_json

    def get(self, key: str, default: Any = None) -> Any:
        return Variable.get(key, default, deserialize_json=self._json)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        return Variable.get(key, deserialize_json=self._json)


class VariableAccessor:
    """The context's ``var``: variables read through the supervisor when used."""

    def __init__(self) -> None:
        self.value = _Values(deserialize_json=False)
        self.json = _Values(deserialize_json=True)


class ConnectionAccessor:
    """The context's ``conn``: ``conn.my_db`` or ``conn.get("my_db")``."""

    def get(self, conn_id: str) -> Connection:
        return Connection.get(conn_id)

    def __getattr__(self, conn_id: str) -> Connection:
        if conn_id.startswith("_"):
            raise AttributeError(conn_id)
        return Connection.get(conn_id)


def date_keys(logical_date: dt.datetime | None) -> dict[str, Any]:
    """``ds``, ``ds_nodash``, ``ts``, ``ts_nodash``, ``ts_nodash_with_tz`` of a logical date."""
    if logical_date is None:
        return dict.fromkeys(("ds", "ds_nodash", "ts", "ts_nodash", "ts_nodash_with_tz"))
    ts = logical_date.isoformat()
    return {
        "ds": logical_date.strftime("%Y-%m-%d"),
        "ds_nodash": logical_date.strftime("%Y%m%d"),
        "ts": ts,
        "ts_nodash": logical_date.strftime("%Y%m%dT%H%M%S"),
        "ts_nodash_with_tz": ts.replace("-", "").replace(":", ""),
    }


def task_params(run_params: dict[str, Any], conf: dict[str, Any], task: Any) -> dict[str, Any]:
    """The DAG's params, then the task's own, then the trigger's conf, as Airflow merges them."""
    own = task.options.params or {}
    values = {k: (v.value if isinstance(v, Param) else v) for k, v in own.items()}
    return {**run_params, **{k: v for k, v in values.items() if k not in conf}}


def instance_key(details: Any) -> str:
    """Airflow's ``task_instance_key_str``: ``dag__task__yyyymmdd`` of the logical date."""
    day = details.logical_date.strftime("%Y%m%d") if details.logical_date else ""
    return f"{details.dag_id}__{details.task_id}__{day}"


def task_context(details: Any, client: SupervisorClient, dag: Any, task: Any) -> dict[str, Any]:
    """The context of one try; ``details`` is what the supervisor sent (``TaskDetails``)."""
    ti = RuntimeTaskInstance(
        details.dag_id,
        details.run_id,
        details.task_id,
        details.map_index,
        details.try_number,
        client,
    )
    dag_run = DagRunInfo(
        details.dag_id,
        details.run_id,
        details.run_type,
        dict(details.conf),
        details.logical_date,
        details.data_interval_start,
        details.data_interval_end,
        details.partition_key,
        details.partition_date,
    )
    return {
        "ti": ti,
        "task_instance": ti,
        "dag": dag,
        "task": task,
        "run_id": details.run_id,
        "dag_run": dag_run,
        "params": task_params(details.params, dag_run.conf, task),
        "task_state_store": TaskStateStore(client),
        "logical_date": details.logical_date,
        "data_interval_start": details.data_interval_start,
        "data_interval_end": details.data_interval_end,
        **date_keys(details.logical_date),
        "conn": ConnectionAccessor(),
        "var": VariableAccessor(),
        "templates_dict": None,
        "partition_key": dag_run.partition_key,
        "map_index_template": task.options.map_index_template,
        "task_instance_key_str": instance_key(details),
        # macros, prev_*_success (lazy), Airflow 2's date keys: tradewind/context_keys.py.
        **context_keys(details, client),  # type: ignore[arg-type]
    }
