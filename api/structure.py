"""The one place ``api/`` reads a DAG's structure: ``state.core.structure.DagStructure``, typed.

Routes and models take the structure through ``dag_view`` and the small readers here, so a
field the structure gains (a description, an owner) is picked up in this file alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from state.core import DagModel, DagStructure, TaskSpec, structure_of
from tradewind.params import ParamValidationError, resolve_params

__all__ = ["DagStructure", "TaskSpec", "dag_view"]


def dag_view(model: DagModel) -> DagStructure:
    """The typed structure of a stored DAG (parsed once per version)."""
    return structure_of(model)


def owners(structure: DagStructure) -> list[str]:
    """The DAG's owners, as Airflow lists them: its tasks' ``owner``s, each once."""
    return sorted({spec.owner for spec in structure.tasks.values()})


def is_mapped(spec: TaskSpec) -> bool:
    return spec.mapping is not None


def params_described(model: DagModel) -> dict[str, dict[str, Any]]:
    """Each param as Airflow's API shows it: its value, description and schema."""
    structure = dag_view(model)
    defaults, specs = structure.params, structure.param_specs
    described = {}
    for name in [*defaults, *(name for name in specs if name not in defaults)]:
        spec = specs.get(name)
        schema = dict(spec.schema_) if spec is not None else {}
        described[name] = {
            "value": defaults.get(name),
            "description": schema.get("description"),
            "schema": schema,
        }
    return described


class BadConf(ValueError):
    """A trigger's conf that the DAG's params refuse."""


def check_conf(model: DagModel, conf: Mapping[str, Any]) -> None:
    """Check a trigger's ``conf`` against the DAG's params (``tradewind.params``, the check the
    CLI's trigger makes too): one line naming the param if not."""
    try:
        resolve_params(dag_view(model), conf)
    except ParamValidationError as error:
        raise BadConf(str(error)) from None
