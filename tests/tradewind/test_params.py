"""``Param``: JSON Schema parameters, their defaults checked at import, the conf at trigger."""

from __future__ import annotations

import pytest

from state.core.structure import parse_structure
from tradewind import DAG, Param, ParamValidationError, task
from tradewind.params import resolve_params


@task
def noop() -> None:
    pass


def structure_of(params: dict[str, object]) -> dict[str, object]:
    with DAG("with_params", params=params) as built:
        noop()
    return built.structure()


def test_plain_values_and_params_give_defaults_and_schemas() -> None:
    structure = structure_of({"n": 3, "level": Param(5, type="integer", minimum=0)})

    assert structure["params"] == {"n": 3, "level": 5}
    assert structure["param_specs"]["level"]["schema"] == {"type": "integer", "minimum": 0}
    assert resolve_params(parse_structure(structure), {"level": 7}) == {"n": 3, "level": 7}


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        (Param(5, type="integer", minimum=0), -1, r"param 'p': -1 is less than the minimum of 0"),
        (Param("a", enum=["a", "b"]), "c", r"param 'p': 'c' is not one of \['a', 'b'\]"),
        (Param("xy", type="string", minLength=2), "y", "param 'p': 'y' is too short"),
        (
            Param("2024-01-01", type="string", format="date"),
            "soon",
            "param 'p': 'soon' is not a 'date'",
        ),
        (Param([1], type="array", items={"type": "number"}), [1, "x"], r"param 'p'\[1\]: 'x'"),
    ],
)
def test_a_bad_value_at_trigger_is_refused_naming_the_param(
    param: Param, value: object, message: str
) -> None:
    structure = structure_of({"p": param})
    with pytest.raises(ParamValidationError, match=message) as error:
        resolve_params(parse_structure(structure), {"p": value})
    assert "\n" not in str(error.value)


def test_a_param_without_default_is_required_at_trigger() -> None:
    structure = structure_of({"needed": Param(type="string")})

    with pytest.raises(ParamValidationError, match="param 'needed' is required"):
        resolve_params(parse_structure(structure), {})
    assert resolve_params(parse_structure(structure), {"needed": "here"}) == {"needed": "here"}


def test_a_default_that_breaks_its_schema_fails_the_import() -> None:
    with pytest.raises(ParamValidationError, match="the default of param 'p'"):
        structure_of({"p": Param("text", type="integer")})


def test_a_schema_with_non_string_keys_is_kept_as_json() -> None:
    structure = structure_of({"p": Param(1, enum=[1, None], values_display={1: "One", None: "-"})})

    assert structure["param_specs"]["p"]["schema"]["values_display"] == {"1": "One", "null": "-"}
