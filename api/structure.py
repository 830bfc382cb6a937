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


def param_specs(model: DagModel) -> Mapping[str, Mapping[str, Any]]:
    """Each param's spec (``{"schema": {...}, "has_default": bool}``), as the authoring API's
    ``Param`` writes it under the structure's ``param_specs``; defaults are under ``params``."""
    specs = (model.structure or {}).get("param_specs") or {}
    return {name: spec for name, spec in specs.items() if isinstance(spec, Mapping)}


def params_described(model: DagModel) -> dict[str, dict[str, Any]]:
    """Each param as Airflow's API shows it: its value, description and schema."""
    defaults = dag_view(model).params
    specs = param_specs(model)
    described = {}
    for name in [*defaults, *(name for name in specs if name not in defaults)]:
        schema = dict(specs.get(name, {}).get("schema") or {})
        described[name] = {
            "value": defaults.get(name),
            "description": schema.get("description"),
            "schema": schema,
        }
    return described


class BadConf(ValueError):
    """A trigger's conf that the DAG's params refuse."""


def check_conf(model: DagModel, conf: Mapping[str, Any]) -> None:
    """Check a trigger's ``conf`` against the DAG's params: one line naming the param if not.

    A param with no schema (a plain default) takes any value, as an Airflow ``Param`` without
    a type does; one without a default must be given; keys no param names pass through.
    """
    defaults = dag_view(model).params
    for name, spec in param_specs(model).items():
        if name in conf:
            value = conf[name]
        elif name in defaults:
            value = defaults[name]
        else:
            raise BadConf(
                f"param {name!r} is required: it has no default and the conf does not give it"
            )
        if schema := spec.get("schema"):
            _validate(name, schema, value)


def _validate(name: str, schema: Mapping[str, Any], value: Any) -> None:
    try:
        jsonschema.validate(value, dict(schema), format_checker=jsonschema.FormatChecker())
    except jsonschema.ValidationError as error:
        where = "".join(f"[{part!r}]" for part in error.absolute_path)
        raise BadConf(f"param {name!r}{where}: {error.message}") from None
    except jsonschema.SchemaError as error:
        raise BadConf(f"param {name!r} has a bad schema: {error.message}") from None
