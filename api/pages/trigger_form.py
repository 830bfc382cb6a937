"""The trigger form of a DAG's page, built from its params, and the conf it posts.

Each param's JSON Schema picks its input: an ``enum`` a select, ``boolean`` a checkbox,
``integer``/``number`` a number field (with its bounds), a ``string`` with a ``date`` or
``date-time`` format a date field, ``array``/``object`` (or no type, when the default is
not text) a JSON text area, anything else a text field. On submit each field is read back
into its type, then checked: every param alone (so each error is shown by its field), then
the whole conf with ``tradewind.params.resolve_params``, the CLI's and the API's one check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from state.core import DagStructure
from tradewind.params import ParamValidationError, check_value, resolve_params

RUN_ID_FIELD = "run_id"
PREFIX = "param:"


@dataclass(frozen=True)
class Field:
    """One input of the form: its param, the kind of input, what it shows."""

    name: str
    kind: str  # select | checkbox | number | date | datetime | json | text
    value: str
    required: bool
    description: str = ""
    options: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    step: str = "any"
    error: str | None = None

    @property
    def input_name(self) -> str:
        return PREFIX + self.name

    @property
    def checked(self) -> bool:
        return self.value == "true"


def _kind(schema: Mapping[str, Any], default: Any) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if "enum" in schema:
        return "select"
    if kind == "boolean":
        return "checkbox"
    if kind in ("integer", "number"):
        return "number"
    if kind == "string":
        return {"date": "date", "date-time": "datetime"}.get(str(schema.get("format")), "text")
    if kind in ("array", "object") or (kind is None and not isinstance(default, str | None)):
        return "json"
    return "text"


def _shown(kind: str, value: Any) -> str:
    """A value as its input shows it."""
    if value is None:
        return ""
    if kind == "checkbox":
        return "true" if value else "false"
    if kind == "json" or (kind == "select" and not isinstance(value, str)):
        return json.dumps(value)
    return str(value)


def fields_of(
    structure: DagStructure,
    given: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
) -> list[Field]:
    """The form's fields, showing ``given`` (what was posted) over the defaults."""
    names = [*structure.params, *(n for n in structure.param_specs if n not in structure.params)]
    made = []
    for name in names:
        spec = structure.param_specs.get(name)
        schema = dict(spec.schema_) if spec is not None else {}
        default = structure.params.get(name)
        kind = _kind(schema, default)
        value = (given or {}).get(name, _shown(kind, default))
        made.append(
            Field(
                name=name,
                kind=kind,
                value=value,
                required=spec is not None and not spec.has_default,
                description=str(schema.get("description") or ""),
                options=tuple(_shown("select", option) for option in schema.get("enum", ())),
                minimum=schema.get("minimum"),
                maximum=schema.get("maximum"),
                step="1" if schema.get("type") == "integer" else "any",
                error=(errors or {}).get(name),
            )
        )
    return made


class BadField(ValueError):
    """A field whose text is not a value of its param's type."""


def _typed(field: Field, text: str) -> Any:
    if field.kind == "checkbox":
        return text == "true"
    if field.kind == "json" or (field.kind == "select" and not _is_text_enum(field)):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise BadField(f"not JSON: {error.msg} (line {error.lineno})") from None
    if field.kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise BadField(f"{text!r} is not a number") from None
        return int(number) if field.step == "1" and number.is_integer() else number
    return text


def _is_text_enum(field: Field) -> bool:
    return all(not option.startswith(("[", "{", '"')) for option in field.options) and not any(
        option in ("true", "false", "null") or _numeric(option) for option in field.options
    )


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Submitted:
    """A posted form read back: the conf, the run id asked for, the errors by field."""

    conf: dict[str, Any]
    run_id: str | None
    errors: dict[str, str]
    posted: dict[str, str]
    form_error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and self.form_error is None


def read_form(structure: DagStructure, form: Mapping[str, str]) -> Submitted:
    """The conf of a posted trigger form, every param checked; errors by field name."""
    fields = fields_of(structure)
    posted = {
        f.name: form.get(f.input_name, "false" if f.kind == "checkbox" else "") for f in fields
    }
    conf: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields:
        text = posted[field.name]
        spec = structure.param_specs.get(field.name)
        schema = spec.schema_ if spec is not None else {}
        if text == "" and (field.kind not in ("text", "checkbox") or not schema):
            if field.required:
                errors[field.name] = "required: give a value"
            continue  # left empty: the default applies
        try:
            value = _typed(field, text)
            check_value(field.name, schema, value)
        except (BadField, ParamValidationError) as error:
            errors[field.name] = str(error)
            continue
        conf[field.name] = value
    run_id = (form.get(RUN_ID_FIELD) or "").strip() or None
    form_error = None
    if not errors:
        try:
            resolve_params(structure, conf)
        except ParamValidationError as error:
            form_error = str(error)
    return Submitted(conf, run_id, errors, posted, form_error)
