"""What parsing a folder computes once and reuses: a param schema's check, a task function's
signature, a DAG's structure. Each reuse must give what computing afresh gives."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tradewind import DAG, DagDefinitionError, Param, ParamValidationError, task
from tradewind import params as params_module
from tradewind.loader import DagBag


@task
def add(x: int, y: int = 1) -> int:
    return x + y


def test_a_schema_is_checked_once_and_its_validator_reused() -> None:
    schema = {"type": "integer", "minimum": 0, "maximum": 9}
    first = params_module._validator(schema)

    assert params_module._validator(dict(schema)) is first
    with DAG("uses_it", params={"n": Param(3, **schema)}):
        pass
    with pytest.raises(ParamValidationError, match="param 'n': 12 is greater than the maximum"):
        params_module.check_value("n", schema, 12)


def test_a_bad_schema_is_refused_every_time() -> None:
    for attempt in range(2):
        with pytest.raises(ParamValidationError, match="param 'p' has a bad schema"):
            DAG(f"bad_{attempt}", params={"p": Param(1, type="no-such-type")})
    assert not any("no-such-type" in key for key in params_module._VALIDATORS)


def test_a_schema_json_does_not_hold_is_checked_without_the_cache() -> None:
    schema = {"type": "integer", "values_display": {1: "One", 2: "Two"}}

    assert params_module._schema_key(schema) is None
    params_module.check_value("p", schema, 1)
    with pytest.raises(ParamValidationError, match="param 'p': 'x' is not of type 'integer'"):
        params_module.check_value("p", schema, "x")


def test_a_task_function_called_many_times_is_inspected_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @task
    def fresh(x: int) -> int:
        return x

    calls: list[Any] = []
    real = inspect.signature

    def counting(function: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
        calls.append(function)
        return real(function, *args, **kwargs)

    monkeypatch.setattr(inspect, "signature", counting)
    with DAG("many_calls") as built:
        for n in range(5):
            fresh(n)
    assert len(built.tasks) == 5
    assert len([f for f in calls if getattr(f, "__name__", "") == "fresh"]) == 1


def test_a_bad_call_is_refused_also_once_the_signature_is_known() -> None:
    with DAG("bad_calls"):
        add(1)
        for _ in range(2):
            with pytest.raises(DagDefinitionError, match="add: got an unexpected keyword"):
                add(1, z=2)


def test_a_bag_keeps_each_dags_structure_and_hash_as_computed_afresh(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(
        textwrap.dedent("""
        from tradewind import DAG, Param, task

        @task
        def step(n: int) -> int:
            return n

        for name in ("one", "two"):
            with DAG(name, params={"n": Param(1, type="integer")}):
                step.expand(n=[1, 2]) >> step(3)
        """)
    )
    bag = DagBag.collect(tmp_path)

    assert sorted(bag.parsed) == ["one", "two"]
    for dag_id, parsed in bag.parsed.items():
        assert parsed.dag is bag.dags[dag_id]
        assert parsed.structure == bag.dags[dag_id].structure()
        assert parsed.version_hash == bag.dags[dag_id].version_hash()
