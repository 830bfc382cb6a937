"""Item progress of iterable task instances, from the checkpoints real tries wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event

from state.core.db import get_engine, session_scope
from state.records.values import TIKey
from state.views.progress import ItemsProgress, items_progress
from tests.worker.iterable_support import Stack, add_iterate_dag


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    return Stack(tmp_path)


def progress(stack: Stack, *keys: TIKey) -> tuple[dict[TIKey, ItemsProgress], int]:
    """The progress of ``keys`` and the number of statements it took."""
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.startswith("SELECT"):
            statements.append(statement)

    engine = get_engine(stack.url)
    event.listen(engine, "before_cursor_execute", count)
    try:
        with session_scope(stack.url) as session:
            found = items_progress(session, list(keys))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    return found, len(statements)


def test_a_failed_try_shows_what_finished_and_a_success_shows_every_item(stack: Stack) -> None:
    add_iterate_dag(stack, fail={3, 7}, concurrency=3)  # 20 items in rounds of 3
    run_pk = stack.trigger("iterate_dag")
    square = TIKey("iterate_dag", "r1", "square")
    collect = TIKey("iterate_dag", "r1", "collect")

    before, _ = progress(stack, square)
    assert before[square] == ItemsProgress(total=None)

    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("square", 1))
    after_try_1, statements = progress(stack, square, collect)
    assert after_try_1[square] == ItemsProgress(done=18, failed=2, skipped=0, total=20)
    assert after_try_1[collect] == ItemsProgress(total=None)
    assert statements == 2

    stack.run_to_end(run_pk)
    at_end, statements = progress(stack, square)
    assert at_end[square] == ItemsProgress(done=20, failed=0, skipped=0, total=20)
    assert at_end[square].finished == 20
    assert statements == 2


def test_the_number_of_queries_does_not_grow_with_the_items(stack: Stack) -> None:
    source = """
from tradewind import dag, task

@task(task_concurrency=8)
def noop(x):
    return x

@dag(dag_id="many")
def many():
    noop.iterate(x=list(range(__N__)))
    noop.batch(size=3).iterate(x=list(range(__N__)))

many()
"""
    stack.add_dag("many", source.replace("__N__", "2000"))
    stack.run_to_end(stack.trigger("many"))
    keys = [TIKey("many", "r1", "noop")] + [TIKey("many", "r1", "noop__1", m) for m in range(3)]

    found, statements = progress(stack, *keys)

    assert statements == 2
    assert found[keys[0]] == ItemsProgress(done=2000, total=2000)
    assert [found[key].total for key in keys[1:]] == [667, 667, 666]
    assert sum(found[key].done for key in keys[1:]) == 2000


def test_no_key_no_query(stack: Stack) -> None:
    assert progress(stack) == ({}, 0)
