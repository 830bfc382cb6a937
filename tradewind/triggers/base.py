"""``BaseTrigger``, ``TriggerEvent`` and ``TaskDeferred``: the deferral API (DESIGN.md §12).

A task defers by raising ``TaskDeferred(trigger=..., method_name=..., kwargs=..., timeout=...)``
(what ``BaseOperator.defer`` does; a ``@task`` function raises it itself). Its try ends as
``deferred``: no try consumed, its worker slot freed, the trigger stored as
``trigger.serialize()``: ``(classpath, kwargs)``, the kwargs JSON with datetimes and timedeltas
(``encode_kwargs``). A triggerer process rebuilds the trigger from those
(``build_trigger``), runs its ``run()`` in its asyncio loop, and the first ``TriggerEvent`` it
yields wakes the task: the same try resumes on a worker in ``method_name(context, event=payload,
**kwargs)`` (a ``@task`` function is called again with ``event=payload`` if it names ``event``).
``timeout`` (a timedelta or seconds) fails the task if no event came first.

A trigger's ``run()`` must await rather than block: the triggerer's one loop runs thousands of
them, and one that holds the loop (a blocking call, a busy loop) is named in its log.
``cleanup()`` runs when the trigger stops (an event, a cancel, a triggerer shutting down).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import importlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from tradewind.exceptions import TradewindError
from tradewind.logging_mixin import LoggingMixin


class TriggerEvent:
    """What a trigger yields: ``payload`` (JSON: datetimes and timedeltas allowed) reaches the
    resumed task as ``event``."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload

    def __repr__(self) -> str:
        return f"TriggerEvent<{self.payload!r}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TriggerEvent) and other.payload == self.payload

    def __hash__(self) -> int:
        return hash(repr(self.payload))


class BaseTrigger(LoggingMixin):
    """Subclass it: ``serialize()`` returns ``(classpath, kwargs)`` that rebuild it
    (``cls(**kwargs)``); ``async run()`` yields ``TriggerEvent``s. ``self.log`` writes to the
    triggerer's log, as Airflow's triggers (the providers') expect."""

    def __init__(self, **kwargs: Any) -> None:
        # Airflow's triggers are built with keyword arguments only; kept for subclasses.
        self.trigger_id: int | None = None
        self.task_instance: Any = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__} must define serialize()")

    async def run(self) -> AsyncIterator[TriggerEvent]:
        raise NotImplementedError(f"{type(self).__name__} must define async run()")
        yield  # pragma: no cover

    async def cleanup(self) -> None:
        """Called once the trigger stops, whatever stopped it."""

    def __repr__(self) -> str:
        try:
            classpath, kwargs = self.serialize()
        except Exception:
            return f"<{type(self).__name__}>"
        return f"<{classpath} {kwargs}>"


class BaseEventTrigger(BaseTrigger):
    """A trigger an ``AssetWatcher`` may run: each event it yields is an asset event."""


def classpath_of(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class TaskDeferred(TradewindError):
    """Raised in a task to defer it until ``trigger`` fires (DESIGN.md §12)."""

    def __init__(
        self,
        *,
        trigger: BaseTrigger,
        method_name: str = "execute_complete",
        kwargs: dict[str, Any] | None = None,
        timeout: dt.timedelta | float | int | None = None,
    ) -> None:
        if not isinstance(trigger, BaseTrigger):
            raise TypeError(f"defer: trigger must be a BaseTrigger, got {type(trigger).__name__}")
        if not isinstance(method_name, str) or not method_name:
            raise TypeError(f"defer: method_name must be a method's name, got {method_name!r}")
        if isinstance(timeout, dt.timedelta):
            timeout = timeout.total_seconds()
        if timeout is not None and (isinstance(timeout, bool) or float(timeout) <= 0):
            raise ValueError(f"defer: timeout must be a positive duration, got {timeout!r}")
        self.trigger = trigger
        self.method_name = method_name
        self.kwargs = dict(kwargs or {})
        self.timeout = float(timeout) if timeout is not None else None
        super().__init__(f"deferred until {trigger!r} fires, resuming in {method_name}")


class TriggerUnavailable(TradewindError):
    """A stored trigger that cannot be rebuilt: its class cannot be imported or refused its
    arguments."""


def build_trigger(classpath: str, kwargs: dict[str, Any]) -> BaseTrigger:
    """The trigger ``classpath(**decode_kwargs(kwargs))``, or ``TriggerUnavailable`` in one line."""
    module_name, _, name = classpath.rpartition(".")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, name)
    except Exception as error:
        raise TriggerUnavailable(
            f"trigger class {classpath} cannot be imported: {type(error).__name__}: {error}"
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, BaseTrigger)):
        raise TriggerUnavailable(f"{classpath} is not a BaseTrigger subclass")
    try:
        return cls(**decode_kwargs(kwargs))
    except Exception as error:
        raise TriggerUnavailable(
            f"trigger {classpath} refused its arguments: {type(error).__name__}: {error}"
        ) from None


_TYPE = "__tw_type"


def encode_kwargs(value: Any) -> Any:
    """``value`` as JSON: datetimes, dates and timedeltas tagged, tuples as lists."""
    if isinstance(value, dt.datetime):
        return {_TYPE: "datetime", "value": value.isoformat()}
    if isinstance(value, dt.date):
        return {_TYPE: "date", "value": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {_TYPE: "timedelta", "value": value.total_seconds()}
    if isinstance(value, dict):
        return {str(k): encode_kwargs(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [encode_kwargs(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"a trigger's argument of type {type(value).__name__} cannot be stored")


def decode_kwargs(value: Any) -> Any:
    """The inverse of ``encode_kwargs``."""
    if isinstance(value, dict):
        kind = value.get(_TYPE)
        if kind == "datetime":
            return dt.datetime.fromisoformat(value["value"])
        if kind == "date":
            return dt.date.fromisoformat(value["value"])
        if kind == "timedelta":
            return dt.timedelta(seconds=value["value"])
        return {k: decode_kwargs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_kwargs(v) for v in value]
    return value


def serialized(trigger: BaseTrigger) -> tuple[str, dict[str, Any]]:
    """``trigger.serialize()`` checked and encoded for the store, or a one-line error."""
    result = trigger.serialize()
    if (
        not isinstance(result, tuple)
        or len(result) != 2
        or not isinstance(result[0], str)
        or not isinstance(result[1], dict)
    ):
        raise TypeError(
            f"{type(trigger).__name__}.serialize() must return (classpath, kwargs), got {result!r}"
        )
    return result[0], encode_kwargs(result[1])


@dataclass(frozen=True)
class Resume:
    """Where a deferred try resumes: set by the task runner for the try, read by the task."""

    method_name: str
    kwargs: dict[str, Any]


#: Set in the task process while a resumed try runs (``worker/task_runner/runner.py``).
RESUMING: contextvars.ContextVar[Resume | None] = contextvars.ContextVar("resuming", default=None)


def resume_of(next_method: str | None, next_kwargs: dict[str, Any] | None) -> Resume | None:
    """The resume point a try was handed, its stored values decoded."""
    if next_method is None:
        return None
    return Resume(next_method, decode_kwargs(dict(next_kwargs or {})))
