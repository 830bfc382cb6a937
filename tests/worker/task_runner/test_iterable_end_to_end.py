"""Iterable and mapped tasks end to end: real forked task processes under the real supervisor.

Each DAG writes what its items do to files in a folder (``calls`` when an item runs,
``callbacks`` when its success callback fires), so the tests see what ran in which try.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun, TaskStateValue, XCom
from state.engine.runs import clear_task_instances
from tests.worker.iterable_support import Stack, add_iterate_dag
from worker import wire as p
from worker.supervisor import requests
from worker.supervisor.try_context import TryContext

TI = TaskInstanceState


def lines(stack: Stack, name: str) -> list[int]:
    path = stack.home / name
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def xcom_of(stack: Stack, task_id: str, map_index: int = -1) -> object:
    with session_scope(stack.url) as session:
        text = session.scalars(
            select(XCom.value).where(XCom.task_id == task_id, XCom.map_index == map_index)
        ).one()
    return json.loads(text)


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    return Stack(tmp_path)


def test_a_retry_runs_only_the_failed_item_and_the_downstream_reads_every_result(
    stack: Stack,
) -> None:
    add_iterate_dag(stack, fail={7})
    run_pk = stack.trigger("iterate_dag")

    assert stack.run_to_end(run_pk) == DagRunState.SUCCESS

    calls = Counter(lines(stack, "calls"))
    assert calls == Counter({**dict.fromkeys(range(20), 1), 7: 2})
    assert Counter(lines(stack, "callbacks")) == Counter(range(20))  # each fired once
    assert xcom_of(stack, "collect") == [x * x for x in range(20)]
    assert [ti.try_number for ti in stack.task_instances("square")] == [2]
    retry_log = stack.log_of("square", 2)
    assert "20 items: 19 finished in earlier tries, 1 to run, 4 at a time" in retry_log
    assert "written: 1 outcomes (1 succeeded, 0 failed, 0 skipped)" in retry_log
    assert "item 6" not in retry_log  # one line per round, none per item


def test_the_first_try_writes_one_batch_per_round_and_success_keeps_only_the_marker(
    stack: Stack,
) -> None:
    add_iterate_dag(stack, fail={7})
    run_pk = stack.trigger("iterate_dag")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("square", 1))  # numbers, then square's try 1

    assert "try 1 ended up_for_retry" in stack.log_of("square", 1)
    keys = state_keys(stack)
    batches = sorted(k for k in keys if k.startswith("_iterable_batch_"))
    assert batches == [f"_iterable_batch_{n}" for n in range(5)]  # 20 items, 4 at a time
    assert "_iterable_complete" in keys

    stack.run_to_end(run_pk)

    keys = state_keys(stack)
    assert not any(k.startswith("_iterable_batch_") for k in keys)
    assert "_iterable_complete" in keys
    assert len([k for k in keys if k.startswith("tries#")]) == 20  # the items' own keys stay


def state_keys(stack: Stack) -> list[str]:
    with session_scope(stack.url) as session:
        return list(session.scalars(select(TaskStateValue.key)))


def test_each_item_keeps_its_own_state_across_tries(stack: Stack) -> None:
    add_iterate_dag(stack, fail={7})
    run_pk = stack.trigger("iterate_dag")

    stack.run_to_end(run_pk)

    with session_scope(stack.url) as session:
        rows = dict(
            session.execute(
                select(TaskStateValue.key, TaskStateValue.value).where(
                    TaskStateValue.key.like("tries#%")
                )
            ).all()
        )
    by_index = {int(key.split("#")[1].split(".")[0]): json.loads(v) for key, v in rows.items()}
    assert by_index[7] == [1, 2]  # the retry saw what its first try set
    assert by_index[6] == [1]


def test_a_retry_that_cannot_read_the_store_fails_before_any_item(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_iterate_dag(stack, fail={7})
    run_pk = stack.trigger("iterate_dag")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("square", 1))
    calls_after_first_try = lines(stack, "calls")

    def unreadable(ctx: TryContext, request: p.ReadCheckpointBatches) -> p.Message:
        raise OperationalError("SELECT", {}, Exception("the database is unreachable"))

    monkeypatch.setitem(requests.HANDLERS, p.ReadCheckpointBatches, unreadable)
    stack.execute_queued()

    assert stack.ti_state("square") == TI.FAILED
    assert lines(stack, "calls") == calls_after_first_try
    log = stack.log_of("square", 2)
    assert "the database is unreachable" in log
    assert "items:" not in log


def test_a_clear_starts_over_even_when_the_state_is_kept(stack: Stack) -> None:
    add_iterate_dag(stack, fail=set(range(20)))
    run_pk = stack.trigger("iterate_dag")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("square", 1))  # every item fails: 5 batches of failures
    add_iterate_dag(stack, fail={3})  # now only item 3 fails in try 1 (none will after)
    stack.queued.clear()  # the retry the supervisor queued: the clear makes it stale
    with session_scope(stack.url) as session:
        run = session.get(DagRun, run_pk)
        assert run is not None
        clear_task_instances(session, run, ["square"], keep_state=True)

    stack.schedule(run_pk)
    stack.execute_queued()

    # Try 3 (try 2 was queued, then cleared) is the first of a new generation: it reads
    # nothing, replays nothing, and every item runs again.
    assert Counter(lines(stack, "calls")) == Counter({n: 2 for n in range(20)})
    assert stack.ti_state("square") == TI.SUCCESS
    assert "20 items: 0 finished in earlier tries" in stack.log_of("square", 3)


def test_a_retry_never_replays_what_an_earlier_generation_wrote(stack: Stack) -> None:
    add_iterate_dag(stack, fail={19})  # try 1: 0..18 succeed, in 5 batches of generation 0
    run_pk = stack.trigger("iterate_dag")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("square", 1))
    stack.queued.clear()
    with session_scope(stack.url) as session:
        run = session.get(DagRun, run_pk)
        assert run is not None
        clear_task_instances(session, run, ["square"], keep_state=True)
    # Generation 1, try 3: item 0 fails at once and stops the rest; only batch 0 is rewritten.
    add_iterate_dag(stack, fails={3: {0}}, concurrency=1, fail_fast=True)
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("square", 3))
    assert "_iterable_batch_4" in state_keys(stack)  # generation 0's later batches are still there

    stack.run_to_end(run_pk)

    # Try 4 read batch 0 (item 0 failed) and stopped at generation 0's batch 1.
    assert "20 items: 0 finished in earlier tries, 20 to run" in stack.log_of("square", 4)
    assert Counter(lines(stack, "calls")) == Counter({0: 3, **{n: 2 for n in range(1, 20)}})


def test_an_item_whose_input_changed_between_tries_runs_again(stack: Stack) -> None:
    add_iterate_dag(stack, fail={7})
    run_pk = stack.trigger("iterate_dag")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("square", 1))
    changed = [100 if x == 3 else x for x in range(20)]
    with session_scope(stack.url) as session:
        session.execute(
            update(XCom).where(XCom.task_id == "numbers").values(value=json.dumps(changed))
        )

    stack.run_to_end(run_pk)

    second_try = lines(stack, "calls")[20:]
    assert sorted(second_try) == [7, 100]
    assert xcom_of(stack, "collect") == [x * x for x in changed]


SEMANTICS_DAG = """
from tradewind import dag, task, SkipTask

@task(task_concurrency=__CONCURRENCY__, fail_fast=__FAIL_FAST__)
def item(x):
    if x == "skip":
        raise SkipTask("nothing to do")
    if x == "fail":
        raise ValueError("broken item")
    return None if x == "none" else x

@dag(dag_id="semantics")
def semantics():
    item.iterate(x=__ITEMS__)

semantics()
"""


def run_semantics(
    stack: Stack, items: list[str], fail_fast: bool = False, concurrency: int = 4
) -> TaskInstanceState:
    source = SEMANTICS_DAG.replace("__ITEMS__", repr(items))
    source = source.replace("__FAIL_FAST__", repr(fail_fast))
    stack.add_dag("semantics", source.replace("__CONCURRENCY__", str(concurrency)))
    stack.run_to_end(stack.trigger("semantics"))
    return stack.ti_state("item")


def test_skipped_items_keep_their_place_as_none_and_so_does_a_none_result(stack: Stack) -> None:
    assert run_semantics(stack, ["a", "skip", "none", "b"]) == TI.SUCCESS

    assert xcom_of(stack, "item") == ["a", None, None, "b"]


@pytest.mark.parametrize("items", [["skip", "skip"], []])
def test_all_items_skipped_or_no_item_skips_the_task_instance(
    stack: Stack, items: list[str]
) -> None:
    assert run_semantics(stack, items) == TI.SKIPPED


def test_one_failed_item_fails_with_its_own_error(stack: Stack) -> None:
    assert run_semantics(stack, ["a", "fail", "b"]) == TI.FAILED

    (ti,) = stack.task_instances("item")
    assert ti.error == "ValueError: broken item"


def test_several_failed_items_fail_with_a_group(stack: Stack) -> None:
    assert run_semantics(stack, ["fail", "a", "fail"]) == TI.FAILED

    (ti,) = stack.task_instances("item")
    assert ti.error is not None
    assert ti.error.startswith("ExceptionGroup: 2 items failed (indexes ")
    assert ti.error.endswith("first: ValueError: broken item")


def test_fail_fast_runs_no_item_after_the_first_failure(stack: Stack) -> None:
    assert run_semantics(stack, ["fail", "a", "b", "c"], fail_fast=True, concurrency=1) == (
        TI.FAILED
    )

    log = stack.log_of("item", 1)
    assert "item 0 failed" in log
    assert "written: 1 outcomes (0 succeeded, 1 failed, 0 skipped)" in log  # none ran after it


MAPPED_DAG = """
from tradewind import dag, task

@task
def pairs():
    return {"a": 1, "b": 2}

@task
def letters():
    return ["x", "y", "z"]

@task
def join(pair, letter, sep):
    return f"{pair[0]}{sep}{pair[1]}{sep}{letter}"

@task
def nothing():
    return []

@task
def never(x):
    raise AssertionError("no item to run")

@task
def collect(values, batched):
    return {"values": values, "batched": batched}

@task(task_concurrency=2)
def tag(x):
    return f"<{x}>"

@dag(dag_id="mapped")
def mapped():
    joined = join.partial(sep="-").expand(pair=pairs(), letter=letters())
    collect(joined, tag.batch(size=4).iterate(x=list(range(10))))
    never.expand(x=nothing())

mapped()
"""


def test_expand_makes_one_task_instance_per_item_of_the_cross_product(stack: Stack) -> None:
    stack.add_dag("mapped", MAPPED_DAG)

    assert stack.run_to_end(stack.trigger("mapped")) == DagRunState.SUCCESS

    assert [ti.map_index for ti in stack.task_instances("join")] == list(range(6))
    assert xcom_of(stack, "collect")["values"] == [
        "a-1-x", "a-1-y", "a-1-z", "b-2-x", "b-2-y", "b-2-z",
    ]  # fmt: skip
    assert [ti.state for ti in stack.task_instances("never")] == [TI.SKIPPED]


def test_batch_deals_items_round_robin_and_the_downstream_sees_item_order(stack: Stack) -> None:
    stack.add_dag("mapped", MAPPED_DAG)

    stack.run_to_end(stack.trigger("mapped"))

    batches = stack.task_instances("tag")
    assert [(ti.map_index, ti.items_total) for ti in batches] == [(0, 3), (1, 3), (2, 2), (3, 2)]
    assert xcom_of(stack, "tag", 1) == ["<1>", "<5>", "<9>"]
    assert xcom_of(stack, "collect")["batched"] == [f"<{n}>" for n in range(10)]


TIMEOUT_DAG = """
import asyncio
from pathlib import Path
from tradewind import dag, task, get_current_context

FOLDER = Path(__FOLDER__)


@task(task_concurrency=8, execution_timeout=1.5, retries=1, retry_delay=0)
async def slow(x):
    if get_current_context()["ti"].try_number == 1 and x >= 6:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            with open(FOLDER / "cancelled", "a") as out:
                out.write(f"{x}\\n")
            raise
    return x


@dag(dag_id="timeout_dag")
def timeout_dag():
    slow.iterate(x=list(range(10)))


timeout_dag()
"""


def test_a_timeout_cancels_the_running_items_and_keeps_what_finished(stack: Stack) -> None:
    stack.add_dag("timeout_dag", TIMEOUT_DAG.replace("__FOLDER__", repr(str(stack.home))))

    assert stack.run_to_end(stack.trigger("timeout_dag")) == DagRunState.SUCCESS

    first = stack.log_of("slow", 1)
    assert "execution_timeout of 1.5s exceeded" in first
    assert sorted(lines(stack, "cancelled")) == [6, 7, 8, 9]  # every item still running
    # Items 0-5 ended in try 1, a round short of 8: written when SIGTERM came, replayed now.
    assert "10 items: 6 finished in earlier tries, 4 to run" in stack.log_of("slow", 2)
    assert xcom_of(stack, "slow") == list(range(10))
