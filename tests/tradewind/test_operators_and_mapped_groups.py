"""Classic operators and mapped task groups as the authoring API builds them."""

from __future__ import annotations

from typing import Any

import pytest

from state.core.structure import parse_structure
from tradewind import DAG, BaseOperator, DagDefinitionError, task, task_group


class Echo(BaseOperator):
    template_fields = ("message",)

    def __init__(self, message: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def execute(self, context: dict[str, Any]) -> Any:
        return self.message


@task
def source() -> list[int]:
    return [1, 2]


@task
def use(value: int) -> int:
    return value


def test_an_operator_is_a_task_with_its_options_and_template_field_upstreams() -> None:
    with DAG("ops") as built:
        first = source()
        echo = Echo(task_id="echo", message=first, retries=2, queue="q")
        echo >> use(echo.output)

    task = built.get_task("echo")
    assert task.operator is echo
    assert task.options.retries == 2 and task.options.queue == "q"
    assert task.upstream_task_ids == {"source"}
    assert built.get_task("use").upstream_task_ids == {"echo"}


def test_an_operator_argument_not_supported_is_refused_naming_it() -> None:
    with DAG("bad_op"), pytest.raises(DagDefinitionError, match="argument 'sla' is not supported"):
        Echo(task_id="echo", message="x", sla=3)


def test_an_operator_outside_a_dag_is_refused() -> None:
    with pytest.raises(DagDefinitionError, match="operator echo made outside a DAG"):
        Echo(task_id="echo", message="x")


def test_a_mapped_operator_is_an_expand_task() -> None:
    with DAG("mapped_op") as built:
        Echo.partial(task_id="echo", retries=1).expand(message=source())

    spec = built.structure()["tasks"]["echo"]
    assert spec["mapping"]["kind"] == "expand"
    assert spec["mapping"]["sources"] == {"message": {"task_id": "source", "key": "return_value"}}
    assert spec["retries"] == 1


def test_every_task_of_a_mapped_group_maps_over_the_groups_arguments() -> None:
    @task_group
    def group(value: int):
        return use(use(value))

    with DAG("mapped_group") as built:
        group.expand(value=source())

    tasks = built.structure()["tasks"]
    for task_id in ("group.use", "group.use__1"):
        assert tasks[task_id]["mapping"]["group"] == "group"
        assert tasks[task_id]["mapping"]["sources"] == {
            "value": {"task_id": "source", "key": "return_value"}
        }
        assert "source" in tasks[task_id]["upstream"]
    assert built.structure()["groups"]["group"]["mapped"] is True


def test_mapping_inside_a_mapped_group_is_refused_in_one_line() -> None:
    @task_group
    def inner(value: int) -> None:
        use(value)

    @task_group
    def outer(value: int) -> None:
        use.expand(value=[1, 2])

    @task_group
    def nesting(value: int) -> None:
        inner.expand(value=[1])

    with DAG("nested"):
        with pytest.raises(DagDefinitionError, match=r"\.expand\(\) inside the mapped task group"):
            outer.expand(value=[1])
        with pytest.raises(DagDefinitionError, match="mapped task group inner inside the mapped"):
            nesting.expand(value=[1])


def test_expand_kwargs_checks_literal_dicts_against_the_function() -> None:
    with DAG("kwargs_list") as built:
        use.expand_kwargs([{"value": 1}, {"value": 2}])
        use.expand_kwargs(source())
        with pytest.raises(DagDefinitionError, match="unexpected keyword argument 'nope'"):
            use.expand_kwargs([{"nope": 1}])
        with pytest.raises(DagDefinitionError, match="takes a list of dicts"):
            use.expand_kwargs([3])

    spec = built.structure()["tasks"]["use__1"]["mapping"]
    assert spec["sources"] == {"__kwargs__": {"task_id": "source", "key": "return_value"}}
    assert built.get_task("use__1").upstream_task_ids == {"source"}


def test_a_zip_is_mapped_over_as_its_parts_side_by_side() -> None:
    with DAG("zipped") as built:
        first, second = source(), source()
        use.expand(value=first.zip(second))
        use.expand(value=first.zip(second.map(str), fillvalue=0))
        with pytest.raises(DagDefinitionError, match="zip with"):
            first.zip([1, 2])  # type: ignore[arg-type]

    tasks = built.structure()["tasks"]
    both = [{"task_id": t, "key": "return_value"} for t in ("source", "source__1")]
    assert tasks["use"]["mapping"]["sources"] == {"value": {"zip": both, "zip_longest": False}}
    assert tasks["use__1"]["mapping"]["sources"]["value"]["zip_longest"] is True
    assert built.get_task("use").upstream_task_ids == {"source", "source__1"}
    parsed = parse_structure(built.structure())
    assert [part.task_id for part in parsed.tasks["use"].mapping.sources["value"].zip] == [
        "source",
        "source__1",
    ]


def test_a_classic_operator_inside_a_mapped_group_is_refused() -> None:
    @task_group
    def with_operator(value: int) -> None:
        Echo(task_id="echo", message=value)

    with (
        DAG("op_in_group"),
        pytest.raises(DagDefinitionError, match="classic operator echo inside the mapped"),
    ):
        with_operator.expand(value=[1])


def test_an_operator_without_execute_fails_the_import() -> None:
    class Idle(BaseOperator):
        pass

    with DAG("idle"), pytest.raises(DagDefinitionError, match="Idle must define execute"):
        Idle(task_id="idle")
