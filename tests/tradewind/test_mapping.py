"""Authoring mapped tasks (.expand, .iterate, .batch, .partial) and the argument rules."""

from __future__ import annotations

from typing import Any

import pytest

from tradewind import DAG, DagDefinitionError, task


@task
def numbers() -> list[int]:
    return [1, 2, 3]


@task(task_concurrency=8)
def add(x: int, y: int = 0) -> int:
    return x + y


def structure_of(build: Any) -> dict[str, Any]:
    with DAG("mapping") as dag:
        build()
    return dag.structure()["tasks"]


def test_expand_over_an_upstream_result_depends_on_it() -> None:
    tasks = structure_of(lambda: add.partial(y=1).expand(x=numbers()))

    assert tasks["add"]["upstream"] == ["numbers"]
    assert tasks["add"]["mapping"] == {
        "kind": "expand",
        "batch_size": None,
        "sources": {"x": {"task_id": "numbers", "key": "return_value"}},
    }


def test_iterate_over_literals_records_their_lengths() -> None:
    tasks = structure_of(lambda: add.iterate(x=[1, 2], y={"a": 1, "b": 2, "c": 3}))

    assert tasks["add"]["mapping"] == {
        "kind": "iterate",
        "batch_size": None,
        "sources": {"x": {"length": 2}, "y": {"length": 3}},
    }


def test_batch_iterate_records_the_batch_size() -> None:
    tasks = structure_of(lambda: add.batch(size=4).iterate(x=numbers()))

    assert tasks["add"]["mapping"]["kind"] == "iterate"
    assert tasks["add"]["mapping"]["batch_size"] == 4


def test_the_values_stay_on_the_task_and_out_of_the_structure() -> None:
    with DAG("mapping") as dag:
        add.partial(y=5).iterate(x=[1, 2])

    mapped = dag.tasks["add"]
    assert mapped.kwargs == {"y": 5}
    assert mapped.mapping is not None
    assert mapped.mapping["kwargs"] == {"x": [1, 2]}


def test_override_then_expand_names_the_task() -> None:
    tasks = structure_of(lambda: add.override(task_id="plus", retries=2).expand(x=[1]))

    assert tasks["plus"]["retries"] == 2
    assert tasks["plus"]["mapping"]["kind"] == "expand"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: add.expand(), "needs at least one keyword argument"),
        (lambda: add.partial(x=1).expand(x=[1]), r"\['x'\] given to both .partial\(\)"),
        (lambda: add.iterate(x=5), "mapped argument 'x' must be a list"),
        (lambda: add.batch(size=0), r"takes an integer >= 1, got 0"),
        (lambda: add.expand(z=[1]), "unexpected keyword argument 'z'"),
        (lambda: task(multiple_outputs=True)(lambda x: x).expand(x=[1]), "multiple_outputs"),
        (
            lambda: task.runtime(command=["true"])(lambda x: None).iterate(x=[1]),
            "for Python tasks",
        ),
    ],
)
def test_malformed_mappings_are_refused(build: Any, message: str) -> None:
    with pytest.raises(DagDefinitionError, match=message), DAG("mapping"):
        build()
