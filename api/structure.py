"""The one place ``api/`` reads a DAG's structure: ``state.structure.DagStructure``, typed.

Routes and models take the structure through ``dag_view`` and the small readers here, so a
field the structure gains (a description, an owner) is picked up in this file alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from state.models import DagModel
from state.structure import DagStructure, TaskSpec, structure_of

__all__ = ["DagStructure", "TaskSpec", "dag_view"]


def dag_view(model: DagModel) -> DagStructure:
    """The typed structure of a stored DAG (parsed once per version)."""
    return structure_of(model)


def text_option(structure: DagStructure, name: str) -> str | None:
    """An optional text option of the DAG (``description``, ``doc_md``); None until the
    structure carries it."""
    value = getattr(structure, name, None)
    return value if isinstance(value, str) else None


def owners(structure: DagStructure) -> list[str]:
    owner = getattr(structure, "owner", None)
    return [owner] if isinstance(owner, str) else []


def is_mapped(spec: TaskSpec) -> bool:
    return spec.mapping is not None


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
