"""The task side: what runs in the task process for a Python task.

It never touches the SQL store: every read and write is a request to the supervisor over the
comms socket (``SupervisorClient``), so the same supervisor can serve a task in any language.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import math
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Collection
from types import CoroutineType, FrameType, FunctionType
from typing import Any, NoReturn

from tradewind import xcom_values
from tradewind.asset_events import asset_context, take_metadata
from tradewind.connections import Connection
from tradewind.context import set_current_context
from tradewind.context_keys import unwrap
from tradewind.dag import DAG
from tradewind.exceptions import FailTask, SkipTask, TaskAwaitingInput
from tradewind.loader import one_line_error
from tradewind.runtime_context import task_context
from tradewind.sensors import Reschedule
from tradewind.standard.options import run_execute_callbacks
from tradewind.task import Task
from tradewind.templates import render_arguments
from tradewind.triggers.base import (
    RESUMING,
    TaskDeferred,
    encode_kwargs,
    resume_of,
    serialized,
)
from tradewind.xcom_arg import RETURN_VALUE, XComArg
from worker import wire as p
from worker.process import set_signal_handler
from worker.task_runner.cross_dag import CrossDagRequests
from worker.task_runner.lookups import connection_of, variable_of
from worker.task_runner.map_index_names import send_rendered_name
from worker.task_runner.mapping import (
    check_mappable,
    expanded_arguments,
    is_expanded,
    read_upstream,
)
from worker.task_runner.xcoms import TaskXComs


class TaskTerminated(BaseException):
    """SIGTERM reached the task (timeout, or its try was taken away)."""


class RequestFailed(RuntimeError):
    """The supervisor answered a request with ``ErrorResponse``."""


class Client(CrossDagRequests):
    """Blocking request/reply over the comms socket; safe to share between threads."""

    def __init__(self, comms: socket.socket) -> None:
        self._comms = comms
        self._lock = threading.Lock()
        self._next_id = 0
        self._broken = False
        self.details: p.TaskDetails | None = None  # set by the handshake
        self.xcoms = TaskXComs(self)

    @property
    def broken(self) -> bool:
        """A request was cut in half (a SIGTERM): no request can be made any more."""
        return self._broken

    def request(self, message: p.Message | p.PreEncoded) -> p.Message:
        return self.exchange(message)[0]

    def exchange(self, message: p.Message | p.PreEncoded) -> tuple[p.Message, bytes]:
        """The reply to ``message``, and the frame it came in."""
        with self._lock:
            if self._broken:
                raise RequestFailed("the channel broke during an earlier request")
            self._next_id += 1
            try:
                self._comms.sendall(_frame(message, self._next_id))
                frame = p.read_frame(self._comms)
                reply = p.TO_TASK.validate_json(frame)
            except BaseException:
                # Half a frame sent or read (SIGTERM, an interrupt): the next reply read
                # would belong to this request, so no request may follow.
                self._broken = True
                raise
        if isinstance(reply, p.ErrorResponse):
            raise RequestFailed(reply.error)
        return reply, frame

    # --- SupervisorClient ---
    def get_xcom(self, task_id: str, key: str, map_index: int | None) -> Any:
        reply, frame = self.exchange(p.GetXCom(task_id=task_id, key=key, map_index=map_index))
        assert isinstance(reply, p.XComResult)
        value = self.xcoms.value(reply, task_id, key, map_index)
        # Walking a large value costs as much as parsing it: only one that may hold a path is.
        if xcom_values.TYPE_KEY.encode() in frame or not self.xcoms.rows_are_values:
            value = xcom_values.decode(value)
        return value

    def set_xcom(self, key: str, value: Any) -> None:
        # The backend runs here; the supervisor gets the row and stores it as given.
        row = self.xcoms.row(key, xcom_values.encode(unwrap(value)))
        self.request(p.SetXCom(key=key, value=row))

    def get_connection(self, conn_id: str) -> Connection:
        return connection_of(self.request(p.GetConnection(conn_id=conn_id)))

    def get_variable(self, key: str) -> str | None:
        return variable_of(self.request(p.GetVariable(key=key)))

    def mask_secret(self, value: str) -> None:
        self.request(p.MaskSecret(value=value))

    def get_state(self, key: str) -> Any:
        reply = self.request(p.GetStateValue(key=key))
        assert isinstance(reply, p.StateValueResult)
        return reply.value if reply.found else None

    def set_state(self, key: str, value: Any, expires_at: dt.datetime | None) -> None:
        self.request(p.SetStateValue(key=key, value=value, expires_at=expires_at))

    def delete_state(self, key: str) -> None:
        self.request(p.DeleteStateValue(key=key))

    def clear_state(self, key_suffix: str = "") -> None:
        self.request(p.ClearStateValues(key_suffix=key_suffix))

    def run_facts(self) -> dict[str, Any]:
        reply = self.request(p.GetRunFacts())
        assert isinstance(reply, p.RunFactsResult)
        return reply.model_dump()

    def set_rendered_map_index(self, name: str) -> None:
        self.request(p.SetRenderedMapIndex(rendered_map_index=name))

    def asset_events(self, uri: str) -> list[dict[str, Any]]:
        reply = self.request(p.GetAssetEvents(uri=uri))
        assert isinstance(reply, p.AssetEventsResult)
        return reply.events

    def get_asset_state(self, uri: str, key: str) -> tuple[bool, Any]:
        reply = self.request(p.GetAssetStateValue(uri=uri, key=key))
        assert isinstance(reply, p.StateValueResult)
        return reply.found, reply.value

    def set_asset_state(self, uri: str, key: str, value: Any) -> None:
        self.request(p.SetAssetStateValue(uri=uri, key=key, value=value))

    def delete_asset_state(self, uri: str, key: str | None) -> None:
        self.request(p.DeleteAssetStateValue(uri=uri, key=key))


def _frame(message: p.Message | p.PreEncoded, request_id: int) -> bytes:
    if isinstance(message, p.PreEncoded):
        return message.frame(request_id)
    message.id = request_id
    return p.encode(message)


# Every task process sends these two unchanged: dumped once, in the parent.
_HANDSHAKE = p.PreEncoded(p.GetTaskDetails(protocol_version=p.PROTOCOL_VERSION))
_SUCCEED = p.PreEncoded(p.SucceedTask())


def _on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    global _try_given_up
    # The SIGUSR2 sent just before can still be entering its handler: Python runs this handler
    # at that one's first instruction, before it sets the flag. Its frame says so.
    if frame is not None and frame.f_code is _on_given_up.__code__:
        _try_given_up = True
    if _try_given_up:
        raise TaskTerminated("the task was stopped: its try no longer holds its task instance")
    raise TaskTerminated("the task was sent SIGTERM (timeout, or its try was stopped)")


#: Set by the supervisor's SIGUSR2, sent just before the SIGTERM that stops a try it no longer
#: holds (cleared, marked failed, given up as a zombie): the failure callbacks are not run here.
_try_given_up = False


def _on_given_up(signum: int, frame: FrameType | None) -> None:
    global _try_given_up
    _try_given_up = True


def open_task(
    comms: socket.socket, dag: DAG, task: Task, given: p.TaskDetails | None = None
) -> tuple[Client, p.TaskDetails, dict[str, Any]]:
    """The start of every task process: SIGTERM handled, the handshake (unless its reply was
    ``given`` with the start), the context set."""
    set_signal_handler(signal.SIGTERM, _on_sigterm)
    set_signal_handler(signal.SIGUSR2, _on_given_up)
    client = Client(comms)
    details = given or client.request(_HANDSHAKE)
    assert isinstance(details, p.TaskDetails)
    client.details = details
    RESUMING.set(resume_of(details.next_method, details.next_kwargs))
    context = build_context(details, client, dag, task)
    set_current_context(context)
    return client, details, context


def run_python_task(
    comms: socket.socket, dag: DAG, task: Task, given: p.TaskDetails | None = None
) -> int:
    """The body of a forked task process; returns its exit code."""
    client, details, context = open_task(comms, dag, task, given)
    try:
        run_execute_callbacks(task.options, context)
        result = take_metadata(call_task(task, context, client), context["outlet_events"])
        # A branch's choice is checked before anything is pushed.
        succeed = succeed_message(task, result, context["outlet_events"].items_to_send())
        push_result(client, task, result)
        send_rendered_name(client, task, context)
        _callback(task.options.on_success_callback, context)
    except SkipTask as skip:
        client.request(p.SkipTask(reason=str(skip)))
        _callback(task.options.on_skipped_callback, context)
        return 0
    except Reschedule as reschedule:  # a sensor not done yet (tradewind/sensors.py)
        client.request(p.RescheduleTask(reschedule_date=reschedule.at))
        return 0
    except TaskDeferred as deferred:  # waits on the triggerer (tradewind/triggers/base.py)
        return _defer(client, task, context, details, deferred)
    except TaskAwaitingInput as asked:  # waits for a person's answer (docs/hitl.md)
        return _await_input(client, task, context, details, asked)
    except (Exception, TaskTerminated) as error:
        return _report_failure(client, task, context, details, error)
    client.request(succeed)
    return 0


def _defer(
    client: Client,
    task: Task,
    context: dict[str, Any],
    details: p.TaskDetails,
    deferred: TaskDeferred,
) -> int:
    """Send the deferral; a trigger that cannot be stored fails the try in one line."""
    try:
        classpath, trigger_kwargs = serialized(deferred.trigger)
        method_kwargs = encode_kwargs(deferred.kwargs)
    except (TypeError, ValueError) as error:
        return _report_failure(client, task, context, details, error)
    print(f"deferred: {deferred}", file=sys.stderr, flush=True)
    client.request(
        p.DeferTask(
            classpath=classpath,
            trigger_kwargs=trigger_kwargs,
            method_name=deferred.method_name,
            method_kwargs=method_kwargs,
            timeout_seconds=deferred.timeout,
        )
    )
    return 0


def _await_input(
    client: Client,
    task: Task,
    context: dict[str, Any],
    details: p.TaskDetails,
    asked: TaskAwaitingInput,
) -> int:
    """Send the question; one that cannot be stored fails the try in one line."""
    try:
        question = encode_kwargs(asked.question)
    except (TypeError, ValueError) as error:
        return _report_failure(client, task, context, details, error)
    print(f"awaiting input: {asked.question.get('subject', '')}", file=sys.stderr, flush=True)
    client.request(
        p.AwaitInput(
            method_name=asked.method_name, question=question, timeout_seconds=asked.timeout
        )
    )
    return 0


def succeed_message(
    task: Task, result: Any, asset_events: list[dict[str, Any]] | None = None
) -> p.PreEncoded | p.SucceedTask:
    """The success to send: with what a branch or a short circuit chose to follow, and what
    the task set on its outlets."""
    if task.choice is None and not asset_events:
        return _SUCCEED
    follow = None if task.choice is None else task.choice.follow(task, result)
    return p.SucceedTask(
        follow=list(follow) if follow is not None else None, asset_events=asset_events or []
    )


def _report_failure(
    client: Client,
    task: Task,
    context: dict[str, Any],
    details: p.TaskDetails,
    error: BaseException,
) -> int:
    traceback.print_exc()
    failure = p.FailTask(error=one_line_error(error), retryable=not isinstance(error, FailTask))
    policy = task.options.retry_policy
    # An explicit FailTask fails whatever the policy says.
    decision = policy.evaluate(error) if policy is not None and failure.retryable else None
    if decision is not None:  # the task's retry policy decides on this exception
        failure.retryable, failure.retry_delay_seconds = (
            decision.retryable,
            decision.retry_delay_seconds,
        )
        print(
            f"retry policy: {'retry' if decision.retryable else 'fail'}, "
            f"{decision.reason or 'a rule matched'}",
            file=sys.stderr,
        )
    context["exception"] = error
    send_rendered_name(client, task, context)

    def call_back() -> None:
        if not failure.retryable or details.try_number >= details.max_tries:
            _callback(task.options.on_failure_callback, context)
        else:
            _callback(task.options.on_retry_callback, context)

    fail_then_call_back(client, failure, call_back)
    return 1


def fail_then_call_back(client: Client, failure: p.FailTask, call_back: Callable[[], None]) -> None:
    """Tell the supervisor the try failed, then run the failure callbacks: unless it refuses.

    It refuses for a try it no longer holds (a zombie the scheduler gave up, a cleared task
    instance): the task was killed for that, and whoever gave the try up ran its callback (the
    scheduler does, for a zombie), so running it here would run it twice. A channel a SIGTERM
    broke mid-request cannot ask: the callbacks run first, unless the supervisor said with
    SIGUSR2 that it stops the task because the try was given up.
    """
    if client.broken:
        if not _try_given_up:
            call_back()
        client.request(failure)  # raises: the supervisor records how the try ended
        return
    try:
        client.request(failure)
    except RequestFailed as refused:
        print(
            f"failure not reported: {refused}; the failure callback is not run here",
            file=sys.stderr,
        )
        return
    call_back()


def _callback(callback: Any, context: dict[str, Any]) -> None:
    if callback is None:
        return
    try:
        callback(context)
    except Exception:
        # A broken callback is logged; it does not change how the try ended.
        print("callback failed:", file=sys.stderr)
        traceback.print_exc()


def build_context(details: p.TaskDetails, client: Client, dag: DAG, task: Task) -> dict[str, Any]:
    context = task_context(details, client, dag, task)
    context.update(asset_context(context, dag, task, client))
    return context


def resolve(value: Any, client: Client) -> Any:
    """Replace every XComArg inside ``value`` by the XCom it stands for."""
    if isinstance(value, XComArg):
        return read_upstream(value, client)
    if isinstance(value, list | tuple):
        return type(value)(resolve(item, client) for item in value)
    if isinstance(value, dict):
        return {key: resolve(item, client) for key, item in value.items()}
    return value


def call_task(task: Task, context: dict[str, Any], client: Client) -> Any:
    assert task.python_callable is not None
    args, kwargs = render_arguments(task, context, lambda arg: resolve(arg, client))
    if is_expanded(task):  # this map index's own item
        map_index = context["ti"].map_index
        kwargs.update(expanded_arguments(task, map_index, lambda value: resolve(value, client)))
    kwargs.update(_context_arguments(task, context, kwargs))
    resume = RESUMING.get()
    if resume is not None and task.operator is None:
        # A @task function that deferred is called again, with the event if it names one.
        names = parameter_names(task.python_callable)
        if "event" in names or takes_any_keyword(task.python_callable):
            kwargs["event"] = resume.kwargs.get("event")
    result = task.python_callable(*args, **kwargs)
    if isinstance(result, CoroutineType):
        result = asyncio.run(result)
    return result


def _context_arguments(
    task: Task, context: dict[str, Any], given: dict[str, Any]
) -> dict[str, Any]:
    """Context keys the function names as parameters (``def run(ti=None, params=None)``), or
    every key when it takes ``**kwargs``, minus those its positional arguments fill."""
    assert task.python_callable is not None
    names = parameter_names(task.python_callable)
    taken = set(given) | set(list(names)[: len(task.args)])
    wanted = context.keys() if takes_any_keyword(task.python_callable) else names
    return {name: context[name] for name in wanted if name in context and name not in taken}


def parameter_names(function: Callable[..., Any]) -> Collection[str]:
    """The names in ``inspect.signature(function).parameters``.

    A plain function's are read off its code object: ``inspect.signature`` cost ~0.45 ms in a
    freshly forked task process, mostly copy-on-write faults on inspect's own objects.
    """
    if type(function) is not FunctionType or any(
        hasattr(function, name) for name in _SIGNATURE_OVERRIDES
    ):
        return inspect.signature(function).parameters
    code = function.__code__
    stars = bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[: code.co_argcount + code.co_kwonlyargcount + stars]


def takes_any_keyword(function: Callable[..., Any]) -> bool:
    """The function has a ``**kwargs`` parameter: it gets the whole context, as in Airflow."""
    if type(function) is FunctionType and not any(
        hasattr(function, name) for name in _SIGNATURE_OVERRIDES
    ):
        return bool(function.__code__.co_flags & inspect.CO_VARKEYWORDS)
    parameters = inspect.signature(function).parameters.values()
    return any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters)


# What inspect.signature consults on a function before its code object.
_SIGNATURE_OVERRIDES = ("__wrapped__", "__signature__", "_partialmethod", "__text_signature__")


def push_result(client: Client, task: Task, result: Any) -> None:
    """The return value becomes the ``return_value`` XCom (and one XCom per key if asked)."""
    if not task.options.do_xcom_push:  # as in Airflow: nothing of the result is stored
        return
    result = unwrap(result)
    if result is None:
        if is_expanded(task):  # a map index's None keeps its place in the downstream list
            client.set_xcom(RETURN_VALUE, None)
        return
    check_serializable(task.task_id, result)
    check_mappable(task, result)
    if task.options.multiple_outputs:
        if not isinstance(result, dict) or not all(isinstance(k, str) for k in result):
            raise TypeError(
                f"task {task.task_id} has multiple_outputs=True but returned "
                f"{type(result).__name__}, not a dict with str keys"
            )
        for key, value in result.items():
            client.set_xcom(key, value)
    client.set_xcom(RETURN_VALUE, result)


def check_serializable(task_id: str, value: Any) -> None:
    """``value`` can be an XCom: JSON once its paths are encoded (``tradewind/xcom_values.py``)."""
    try:
        json.dumps(xcom_values.encode(value), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"task {task_id} returned a value that cannot be stored as JSON: "
            f"{_offending(value) or error}"
        ) from None


def _offending(value: Any) -> str | None:
    """Name the first value inside ``value`` that JSON cannot hold."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"the float {value} (NaN and infinities are not JSON)"
    if value is None or isinstance(value, str | int | float | bool):
        return None
    if isinstance(value, dict):
        bad_keys = [k for k in value if not isinstance(k, _JSON_KEYS)]
        if bad_keys:
            return f"a dict key of type {type(bad_keys[0]).__name__}"
        return next(filter(None, map(_offending, value.values())), None)
    if isinstance(value, list | tuple):
        return next(filter(None, map(_offending, value)), None)
    return f"a value of type {type(value).__name__}"


_JSON_KEYS = (str, int, float, bool, type(None))
