"""``Param``: a DAG parameter with a JSON Schema, validated when a run is triggered.

As in Airflow, a plain value in ``params={...}`` is a parameter with that default and no schema;
``Param(default, type=..., enum=..., minimum=..., format=..., ...)`` adds one (every keyword but
``description`` is schema). The DAG's structure keeps each parameter's default under ``params``
and its schema under ``param_specs``; ``resolve_params`` merges a trigger's conf over the
defaults and validates the result with the ``jsonschema`` package, so the CLI and the API
refuse a bad value with one line naming the parameter.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final, Protocol

from tradewind.exceptions import DagDefinitionError


class _NotSet:
    def __repr__(self) -> str:
        return "NOTSET"


NOTSET: Final = _NotSet()


class ParamValidationError(DagDefinitionError):
    """A parameter's value does not match its schema, or a required one was not given."""


class Param:
    """A parameter's default, its description and its JSON Schema."""

    def __init__(
        self, default: Any = NOTSET, description: str | None = None, **schema: Any
    ) -> None:
        self.value = default
        self.description = description
        self.schema = dict(schema)
        if description is not None:
            self.schema.setdefault("description", description)

    def __repr__(self) -> str:
        return f"Param({self.value!r}, schema={self.schema!r})"

    @property
    def has_value(self) -> bool:
        return self.value is not NOTSET

    def resolve(self, value: Any = NOTSET, name: str = "param") -> Any:
        """``value`` (or the default) once it matches the schema."""
        chosen = self.value if value is NOTSET else value
        if chosen is NOTSET:
            raise ParamValidationError(
                f"param {name!r} is required: it has no default and no value was given"
            )
        check_value(name, self.schema, chosen)
        return chosen

    def dump(self) -> dict[str, Any]:
        """As JSON holds it: keys become strings (``values_display={1: "One", None: ...}``)."""
        try:
            schema = json.loads(json.dumps(self.schema))
        except (TypeError, ValueError) as error:
            raise DagDefinitionError(f"a Param's schema is not JSON: {error}") from None
        return {"schema": schema, "has_default": self.has_value}


def check_value(name: str, schema: Mapping[str, Any], value: Any) -> None:
    if not schema:
        return  # a plain value: nothing to check (and jsonschema not imported)
    # Imported here: ~50 ms that a DAG file without schemas, and every task process, never pays.
    import jsonschema

    try:
        error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(value))
    except jsonschema.SchemaError as bad:
        raise ParamValidationError(f"param {name!r} has a bad schema: {bad.message}") from None
    if error is not None:
        where = "".join(f"[{part!r}]" for part in error.absolute_path)
        raise ParamValidationError(f"param {name!r}{where}: {error.message}")


#: Validators by schema (as JSON text), each schema checked against its metaschema once.
_VALIDATORS: dict[str, Any] = {}
_MAX_VALIDATORS = 1024


def _validator(schema: Mapping[str, Any]) -> Any:
    """A validator for ``schema``, which is checked first (``SchemaError`` if it is bad).

    Cached: checking a schema against its metaschema costs ten times validating a value, and
    every parse of a DAG file checks the defaults of its params again. Only a schema that JSON
    holds exactly is cached, under its JSON text; another is checked at every call.
    """
    import jsonschema

    schema = dict(schema)
    key = _schema_key(schema)
    validator = _VALIDATORS.get(key) if key is not None else None
    if validator is None:
        kind = jsonschema.validators.validator_for(schema)
        kind.check_schema(schema)
        validator = kind(schema, format_checker=jsonschema.FormatChecker())
        if key is not None:
            if len(_VALIDATORS) >= _MAX_VALIDATORS:
                _VALIDATORS.clear()
            _VALIDATORS[key] = validator
    return validator


def _schema_key(schema: Mapping[str, Any]) -> str | None:
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return text if json.loads(text) == schema else None


def as_param(value: Any) -> Param:
    return value if isinstance(value, Param) else Param(value)


def params_structure(
    params: Mapping[str, Any], dag_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The defaults (``params``) and the specs (``param_specs``) of a DAG's structure.

    A default that does not match its own schema fails the DAG's import.
    """
    values, specs = {}, {}
    for name, given in params.items():
        param = as_param(given)
        if param.has_value:
            try:
                values[name] = param.resolve(name=name)
            except ParamValidationError as error:
                raise ParamValidationError(f"DAG {dag_id}: the default of {error}") from None
        specs[name] = param.dump()
    return values, specs


class _Schema(Protocol):
    @property
    def schema_(self) -> Mapping[str, Any]: ...


class _WithParams(Protocol):
    """What ``resolve_params`` reads of a DAG's structure
    (``state.core.structure.DagStructure``)."""

    @property
    def params(self) -> Mapping[str, Any]: ...

    @property
    def param_specs(self) -> Mapping[str, _Schema]: ...


def resolve_params(structure: _WithParams, conf: Mapping[str, Any]) -> dict[str, Any]:
    """A run's params: ``conf`` over the DAG's defaults, every parameter checked (the CLI's
    trigger and the API's use this one check)."""
    resolved = copy.deepcopy(dict(structure.params))
    resolved.update(conf)
    for name, spec in structure.param_specs.items():
        if name not in resolved:
            raise ParamValidationError(
                f"param {name!r} is required: it has no default and the conf does not give it"
            )
        check_value(name, spec.schema_, resolved[name])
    return resolved
