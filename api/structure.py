"""The one place ``api/`` reads a DAG's serialized structure (``DagModel.structure``).

Everything the routes and pages need of a DAG's shape comes through ``DagView`` and
``TaskView``, so moving to the typed ``state.structure.DagStructure`` is a change of this file
only. Keys missing from an older structure get the defaults the authoring API uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from state.models import DagModel


@dataclass(frozen=True)
class TaskView:
    task_id: str
    upstream: tuple[str, ...] = ()
    downstream: tuple[str, ...] = ()
    trigger_rule: str = "all_success"
    retries: int = 0
    retry_delay_seconds: float = 0.0
    execution_timeout_seconds: float | None = None
    queue: str = "default"
    pool: str = "default_pool"
    is_mapped: bool = False
    is_runtime: bool = False


@dataclass(frozen=True)
class DagView:
    dag_id: str
    tasks: Mapping[str, TaskView]
    params: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    schedule: str | None = None
    start_date: str | None = None
    catchup: bool = False
    max_active_tasks: int = 16
    max_active_runs: int = 16
    description: str | None = None
    doc_md: str | None = None
    owners: tuple[str, ...] = ()


def _task(task_id: str, spec: Mapping[str, Any]) -> TaskView:
    return TaskView(
        task_id=task_id,
        upstream=tuple(spec.get("upstream", ())),
        downstream=tuple(spec.get("downstream", ())),
        trigger_rule=str(spec.get("trigger_rule", "all_success")),
        retries=int(spec.get("retries", 0)),
        retry_delay_seconds=float(spec.get("retry_delay_seconds", 0) or 0),
        execution_timeout_seconds=spec.get("execution_timeout_seconds"),
        queue=str(spec.get("queue", "default")),
        pool=str(spec.get("pool", "default_pool")),
        is_mapped=spec.get("mapping") is not None,
        is_runtime=bool(spec.get("runtime", False)),
    )


def dag_view(model: DagModel) -> DagView:
    structure: Mapping[str, Any] = model.structure or {}
    tasks = structure.get("tasks", {})
    owner = structure.get("owner")
    return DagView(
        dag_id=model.dag_id,
        tasks={task_id: _task(task_id, spec) for task_id, spec in tasks.items()},
        params=dict(structure.get("params") or {}),
        tags=tuple(structure.get("tags") or ()),
        schedule=structure.get("schedule"),
        start_date=structure.get("start_date"),
        catchup=bool(structure.get("catchup", False)),
        max_active_tasks=int(structure.get("max_active_tasks", 16)),
        max_active_runs=int(structure.get("max_active_runs", 16)),
        description=structure.get("description"),
        doc_md=structure.get("doc_md"),
        owners=(owner,) if isinstance(owner, str) else tuple(structure.get("owners") or ()),
    )


def _is_param(value: Any) -> bool:
    """A param with a JSON Schema (``Param(...)``), as opposed to a plain default value."""
    return isinstance(value, dict) and "schema" in value and isinstance(value["schema"], dict)


def params_described(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each param as Airflow's API shows it: its value, description and schema."""
    described = {}
    for name, value in params.items():
        if _is_param(value):
            described[name] = {
                "value": value.get("value"),
                "description": value.get("description"),
                "schema": value["schema"],
            }
        else:
            described[name] = {"value": value, "description": None, "schema": {}}
    return described


class BadConf(ValueError):
    """A trigger's conf that the DAG's params refuse."""


def check_conf(params: Mapping[str, Any], conf: Mapping[str, Any]) -> None:
    """Validate a trigger's ``conf`` against the params that carry a schema: one line if not.

    A plain default (``params={"n": 5}``) accepts any value, as an Airflow ``Param`` without a
    type does; keys no param names are passed through, as Airflow does.
    """
    for name, param in params.items():
        if not _is_param(param):
            continue
        value = conf.get(name, param.get("value"))
        try:
            jsonschema.validate(value, param["schema"])
        except jsonschema.ValidationError as error:
            raise BadConf(f"param {name!r}: {error.message}") from None
        except jsonschema.SchemaError as error:
            raise BadConf(f"param {name!r} has an invalid schema: {error.message}") from None
