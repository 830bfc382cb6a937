"""The scheduler gives mapped tasks their task instances once their input is known."""

from __future__ import annotations

from pathlib import Path

import pytest

from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun
from state.engine import mapping
from state.engine.runs import clear_task_instances
from tests.worker.iterable_support import Stack

TI = TaskInstanceState

DAG = """
from pathlib import Path
from tradewind import dag, task

COUNT = Path(__COUNT__)

@task
def numbers():
    return list(range(int(COUNT.read_text())))

@task
def square(x):
    return x * x

@task(task_concurrency=2)
def tag(x):
    return str(x)

@task
def total(squares, tags):
    return [sum(squares), tags]

@dag(dag_id="expansion")
def expansion():
    xs = numbers()
    total(square.expand(x=xs), tag.batch(size=4).iterate(x=xs))

expansion()
"""


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    stack = Stack(tmp_path)
    stack.add_dag("expansion", DAG.replace("__COUNT__", repr(str(tmp_path / "count"))))
    return stack


def run_with(stack: Stack, count: int, run_pk: int | None = None) -> int:
    (stack.home / "count").write_text(str(count))
    if run_pk is None:
        run_pk = stack.trigger("expansion")
    else:
        with session_scope(stack.url) as session:
            run = session.get(DagRun, run_pk)
            assert run is not None
            clear_task_instances(session, run)
    assert stack.run_to_end(run_pk) == DagRunState.SUCCESS
    return run_pk


def states(stack: Stack, task_id: str) -> dict[int, TaskInstanceState]:
    return {ti.map_index: TI(ti.state) for ti in stack.task_instances(task_id)}


def test_a_mapped_task_starts_as_one_placeholder_and_is_expanded_when_ready(
    stack: Stack,
) -> None:
    (stack.home / "count").write_text("5")
    run_pk = stack.trigger("expansion")
    assert states(stack, "square") == {-1: TI.NONE}

    stack.run_to_end(run_pk)

    assert states(stack, "square") == dict.fromkeys(range(5), TI.SUCCESS)
    assert states(stack, "tag") == dict.fromkeys(range(4), TI.SUCCESS)


def test_fewer_items_than_the_batch_size_make_fewer_task_instances(stack: Stack) -> None:
    run_with(stack, 2)

    assert states(stack, "tag") == {0: TI.SUCCESS, 1: TI.SUCCESS}


def test_a_cleared_mapped_task_is_counted_again(stack: Stack) -> None:
    run_pk = run_with(stack, 5)

    run_with(stack, 3, run_pk)

    assert states(stack, "square") == {
        **dict.fromkeys(range(3), TI.SUCCESS),
        3: TI.REMOVED,
        4: TI.REMOVED,
    }
    assert states(stack, "tag") == dict.fromkeys(range(3), TI.SUCCESS) | {3: TI.REMOVED}

    run_with(stack, 6, run_pk)

    assert states(stack, "square") == dict.fromkeys(range(6), TI.SUCCESS)
    generations = {ti.generation for ti in stack.task_instances("square")}
    assert len(generations) == 1  # the restored and the added ones are of the current one


def test_no_item_skips_the_mapped_task_and_its_downstream(stack: Stack) -> None:
    run_with(stack, 0)

    assert states(stack, "square") == {-1: TI.SKIPPED}
    assert states(stack, "total") == {-1: TI.SKIPPED}


def test_a_pass_with_no_mapped_task_ready_reads_nothing_more(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    (stack.home / "count").write_text("3")
    looked: list[str] = []
    real = mapping._siblings

    def spy(*args: object) -> object:
        looked.append(str(args[2]))
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(mapping, "_siblings", spy)
    run_pk = stack.trigger("expansion")

    stack.schedule(run_pk)  # only `numbers` is ready
    assert looked == []
    stack.execute_queued()  # numbers ends; its supervisor's pass expands both mapped tasks
    assert sorted(looked) == ["square", "tag"]
