"""An iterable task instance (``.iterate``): every item runs in this one task process.

The body of the forked task process when the task is iterable (``worker/supervisor/execute.py``
picks it): 1. the handshake and context as for any Python task; then the input: mapped lists and
   shared arguments resolved, and this task instance's items (all, or its batch) fingerprinted;
2. the number of items recorded (progress), then ``Checkpoints.read``: a retry reads every
   earlier batch in one request, and fails right there, before any item, if it cannot;
3. items finished in an earlier try of this generation are replayed (no call, no callback);
   the others run ``task_concurrency`` at a time, each reported (log line, success callback)
   as it ends, then recorded for its round;
4. the rest written, then the marker; then the task instance ends: failed if an item failed,
   skipped if every item was (or there was none), else a success whose XCom is the list of
   results in index order, after which the batches are deleted.
"""

from __future__ import annotations

import inspect
import logging
import socket
from collections.abc import Sequence
from typing import Any

from tradewind.context import CONTEXT_KEYS, set_current_context
from tradewind.dag import DAG
from tradewind.exceptions import FailTask, SkipTask
from tradewind.loader import one_line_error
from tradewind.standard.options import run_execute_callbacks
from tradewind.state_store import TaskStateStore
from tradewind.task import Task
from tradewind.xcom_arg import RETURN_VALUE
from worker import wire as p
from worker.task_runner.checkpoint_store import SupervisorCheckpointStore
from worker.task_runner.checkpoints import (
    FAILED,
    SKIPPED,
    SUCCESS,
    Checkpoints,
    EarlierCheckpoints,
    IndexedTaskOutcome,
)
from worker.task_runner.item_pool import run_in_threads, run_on_loop
from worker.task_runner.mapping import Item, iterable_items, mapped_lists
from worker.task_runner.runner import (
    Client,
    TaskTerminated,
    _callback,
    _report_failure,
    check_serializable,
    fail_then_call_back,
    open_task,
    resolve,
)

log = logging.getLogger("tradewind.iterable")


def run_iterable_task(
    comms: socket.socket, dag: DAG, task: Task, given: p.TaskDetails | None = None
) -> int:
    """The body of a forked task process for an iterable task; returns its exit code."""
    client, details, context = open_task(comms, dag, task, given)
    store = SupervisorCheckpointStore(client)
    checkpoints = Checkpoints(store, details.generation, task.options.task_concurrency)
    try:
        run_execute_callbacks(task.options, context)
        runner = ItemRunner(task, context, client, checkpoints)
        items = runner.prepare(details.map_index, is_retry(details, task))
        runner.run_all(items)
        checkpoints.finish(summary(items, runner.outcomes))
        return conclude(client, details, items, runner, checkpoints)
    except (Exception, TaskTerminated) as error:
        # Stopped or broken mid-way: what finished is kept for the retry, if the store takes it.
        checkpoints.write_rest()
        return _report_failure(client, task, context, details, error)


def is_retry(details: p.TaskDetails, task: Task) -> bool:
    """A later try of this generation: a clear sets ``max_tries`` to the try number + retries + 1,
    so the first try of a generation is ``max_tries - retries``."""
    return details.try_number > details.max_tries - task.options.retries


class ItemRunner:
    """Runs the items of one task instance: each with its own context, report and record."""

    def __init__(
        self, task: Task, context: dict[str, Any], client: Client, checkpoints: Checkpoints
    ) -> None:
        assert task.python_callable is not None
        self.task = task
        self.function = task.python_callable
        self.context = context
        self.client = client
        self.checkpoints = checkpoints
        self.outcomes: dict[int, IndexedTaskOutcome] = {}
        self.items: dict[int, Item] = {}
        self.partial: dict[str, Any] = {}
        parameters = inspect.signature(self.function).parameters
        self.context_names = [name for name in CONTEXT_KEYS if name in parameters]

    def prepare(self, map_index: int, retry: bool) -> list[Item]:
        """Resolve the input, record the count, read earlier checkpoints, replay what they hold."""
        self.partial = resolve(self.task.kwargs, self.client)
        lists = mapped_lists(self.task, lambda value: resolve(value, self.client))
        items = iterable_items(self.task, map_index, lists, self.partial)
        self.client.request(p.SetItemsTotal(total=len(items)))
        earlier = self.checkpoints.read(retry)
        self.items = {item.index: item for item in items}
        self.replay(items, earlier)
        return items

    def replay(self, items: Sequence[Item], earlier: EarlierCheckpoints) -> None:
        """Take the outcomes of items finished in earlier tries: they do not run again."""
        for item in items:
            outcome = earlier.replay(item)
            if outcome is not None:
                self.outcomes[item.index] = outcome

    def run_all(self, items: Sequence[Item]) -> None:
        todo = [item for item in items if item.index not in self.outcomes]
        concurrency = self.task.options.task_concurrency
        log.info(
            "%d items: %d finished in earlier tries, %d to run, %d at a time",
            len(items),
            len(items) - len(todo),
            len(todo),
            concurrency,
        )
        if inspect.iscoroutinefunction(self.function):
            run_on_loop(todo, self.arun, concurrency)
        else:
            run_in_threads(todo, self.run, concurrency)

    def context_of(self, item: Item) -> dict[str, Any]:
        """The task's context, with the item's own state store (keys suffixed with its index)."""
        context = dict(self.context)
        suffix = f"#{item.index}.{item.fingerprint}"
        context["task_state_store"] = TaskStateStore(self.client, key_suffix=suffix)
        context["item_index"] = item.index
        context["item_arguments"] = item.arguments
        return context

    def _arguments(self, item: Item, context: dict[str, Any]) -> dict[str, Any]:
        arguments = {**self.partial, **item.arguments}
        arguments.update((name, context[name]) for name in self.context_names)
        return arguments

    def run(self, item: Item) -> bool:
        """Run one plain item; True when the rest must stop (``fail_fast``)."""
        context = self.context_of(item)
        set_current_context(context)
        try:
            outcome = self._success(item, self.function(**self._arguments(item, context)))
        except SkipTask as skip:
            outcome = IndexedTaskOutcome.skipped(item, str(skip))
        except Exception as error:
            outcome = self._failure(item, error)
        return self._finish(outcome, context)

    async def arun(self, item: Item) -> bool:
        """Run one ``async def`` item on the loop; a cancellation leaves it without an outcome."""
        context = self.context_of(item)
        set_current_context(context)
        try:
            outcome = self._success(item, await self.function(**self._arguments(item, context)))
        except SkipTask as skip:
            outcome = IndexedTaskOutcome.skipped(item, str(skip))
        except Exception as error:
            outcome = self._failure(item, error)
        return self._finish(outcome, context)

    def _success(self, item: Item, value: Any) -> IndexedTaskOutcome:
        check_serializable(self.task.task_id, value)
        return IndexedTaskOutcome.success(item, value)

    def _failure(self, item: Item, error: Exception) -> IndexedTaskOutcome:
        log.exception("item %d failed", item.index)
        return IndexedTaskOutcome.failure(item, error, one_line_error(error))

    def _finish(self, outcome: IndexedTaskOutcome, context: dict[str, Any]) -> bool:
        """Report (reported before durable: see docs/iterable-tasks.md), then record."""
        self.outcomes[outcome.index] = outcome
        if outcome.status == SUCCESS:  # logged per round, with the checkpoint (not per item)
            _callback(self.task.options.on_success_callback, context)
        self.checkpoints.record(outcome)
        return outcome.stops_the_rest(self.task.options.fail_fast)

    def failure_callback(self, outcome: IndexedTaskOutcome) -> None:
        context = self.context_of(self.items[outcome.index])
        context["exception"] = outcome.exception
        _callback(self.task.options.on_failure_callback, context)


def summary(items: Sequence[Item], outcomes: dict[int, IndexedTaskOutcome]) -> dict[str, int]:
    """The counts the completion marker keeps (``tradewind runs show`` reads them)."""
    statuses = [outcomes[item.index].status for item in items if item.index in outcomes]
    return {
        "total": len(items),
        "succeeded": statuses.count(SUCCESS),
        "failed": statuses.count(FAILED),
        "skipped": statuses.count(SKIPPED),
    }


def conclude(
    client: Client,
    details: p.TaskDetails,
    items: Sequence[Item],
    runner: ItemRunner,
    checkpoints: Checkpoints,
) -> int:
    """End the task instance from its items' outcomes."""
    outcomes = [runner.outcomes.get(item.index) for item in items]
    failed = [outcome for outcome in outcomes if outcome is not None and outcome.status == FAILED]
    if failed:
        return fail_items(client, details, runner, failed)
    if None in outcomes:
        raise RuntimeError("an item ended without an outcome")
    if all(outcome.status == SKIPPED for outcome in outcomes if outcome is not None):
        reason = "every item was skipped" if items else "no item to run: the input is empty"
        client.request(p.SkipTask(reason=reason))
        return 0
    results = [o.value if o is not None and o.status == SUCCESS else None for o in outcomes]
    if runner.task.options.do_xcom_push:
        client.set_xcom(RETURN_VALUE, results)
    checkpoints.clear()
    client.request(p.SucceedTask())
    return 0


def fail_items(
    client: Client, details: p.TaskDetails, runner: ItemRunner, failed: list[IndexedTaskOutcome]
) -> int:
    """One failed item fails the task instance with its error; several, with a group."""
    errors = [outcome.exception for outcome in failed if isinstance(outcome.exception, Exception)]
    retryable = not any(isinstance(error, FailTask) for error in errors)

    def call_back() -> None:
        if not retryable or details.try_number >= details.max_tries:
            for outcome in failed:
                runner.failure_callback(outcome)

    if len(errors) == 1:
        error: Exception = errors[0]
    else:
        indexes = ", ".join(str(outcome.index) for outcome in failed[:10])
        error = ExceptionGroup(f"{len(failed)} items failed (indexes {indexes})", errors)
    text = one_line_error(error)
    if len(errors) > 1:
        text += f"; first: {one_line_error(errors[0])}"
    fail_then_call_back(client, p.FailTask(error=text, retryable=retryable), call_back)
    return 1
