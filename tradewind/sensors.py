"""Sensors: tasks that poke until they are done, as Airflow 3's ``@task.sensor`` and
``BaseSensorOperator`` (``tradewind/sensor_operator.py``, which pokes with the same ``Poker``).

The function (or the operator's ``poke(context)``) returns a bool or a
``PokeReturnValue(is_done, xcom_value)``. In ``mode="poke"`` the
task process pokes, sleeps ``poke_interval`` and pokes again, holding its worker slot all along.
In ``mode="reschedule"`` a poke that is not done ends the try as ``up_for_reschedule`` with the
next poke's time: the slot is free meanwhile, and the scheduler queues the same try again when
the poke is due (DESIGN.md §4). ``timeout`` counts from the first poke of the task instance
since its last clear, across re-pokes and retries (as in Airflow): in reschedule mode that first
poke's time is kept in the task's state store under a reserved key. Past it the task fails with
one line, or is skipped with ``soft_fail=True``.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tradewind.context import get_current_context
from tradewind.exceptions import DagDefinitionError, FailTask, SkipTask
from tradewind.task import TaskDecorator, as_timedelta, task_options

#: Where a rescheduled sensor keeps its first poke (the iterable prefix: reserved for Tradewind).
FIRST_POKE_KEY = "_iterable_sensor_first_poke"
#: Airflow's defaults: a poke a minute, for at most a week.
DEFAULT_POKE_INTERVAL = dt.timedelta(seconds=60)
DEFAULT_TIMEOUT = dt.timedelta(days=7)


@dataclass(frozen=True)
class PokeReturnValue:
    """What a poke may return: whether the wait is over, and the task's XCom when it is."""

    is_done: bool
    xcom_value: Any = None

    def __bool__(self) -> bool:
        return self.is_done


class Reschedule(Exception):
    """Raised in the task process: end this try as ``up_for_reschedule``, poke again at ``at``."""

    def __init__(self, at: dt.datetime) -> None:
        super().__init__(f"next poke at {at.isoformat()}")
        self.at = at


class SensorTimeout(FailTask):
    """The sensor was not done within its ``timeout``: not retried, as in Airflow."""


@dataclass(frozen=True)
class SensorOptions:
    """What ``@task.sensor(...)`` takes besides the task options."""

    poke_interval: dt.timedelta
    timeout: dt.timedelta
    mode: Literal["poke", "reschedule"]
    soft_fail: bool
    exponential_backoff: bool
    max_wait: dt.timedelta | None

    def delay(self, pokes: int) -> float:
        """Seconds until the next poke after ``pokes`` pokes (doubling with backoff)."""
        seconds = self.poke_interval.total_seconds()
        if self.exponential_backoff:
            seconds *= 2 ** min(pokes - 1, 32)
        if self.max_wait is not None:
            seconds = min(seconds, self.max_wait.total_seconds())
        return seconds


def sensor_options(
    poke_interval: Any,
    timeout: Any,
    mode: str,
    soft_fail: bool,
    backoff: bool,
    max_wait: Any,
    where: str = "@task.sensor",
) -> SensorOptions:
    """The options checked; ``where`` names the sensor in an error (a decorator or a class)."""
    if mode not in ("poke", "reschedule"):
        raise DagDefinitionError(f"{where}: mode must be 'poke' or 'reschedule', got {mode!r}")
    interval = as_timedelta(poke_interval, f"{where} poke_interval")
    if interval is None or interval.total_seconds() <= 0:
        raise DagDefinitionError(f"{where}: poke_interval must be > 0, got {poke_interval!r}")
    return SensorOptions(
        poke_interval=interval,
        timeout=as_timedelta(timeout, f"{where} timeout") or DEFAULT_TIMEOUT,
        mode=mode,  # type: ignore[arg-type]
        soft_fail=bool(soft_fail),
        exponential_backoff=bool(backoff),
        max_wait=as_timedelta(max_wait, f"{where} max_wait"),
    )


def sensor(
    python_callable: Callable[..., Any] | None = None,
    *,
    poke_interval: Any = DEFAULT_POKE_INTERVAL,
    timeout: Any = DEFAULT_TIMEOUT,
    mode: str = "poke",
    soft_fail: bool = False,
    exponential_backoff: bool = False,
    max_wait: Any = None,
    **options: Any,
) -> Any:
    """``@task.sensor`` / ``@task.sensor(poke_interval=..., timeout=..., mode=...)``."""
    parsed = task_options("@task.sensor", options)
    waiting = sensor_options(poke_interval, timeout, mode, soft_fail, exponential_backoff, max_wait)

    def decorate(function: Callable[..., Any]) -> TaskDecorator:
        return TaskDecorator(_poking(function, waiting), parsed, options)

    return decorate(python_callable) if python_callable is not None else decorate


def _poking(function: Callable[..., Any], options: SensorOptions) -> Callable[..., Any]:
    """``function`` as a task body that pokes it as ``options`` say."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        return Poker(function, options, get_current_context()).run(args, kwargs)

    return run


class Poker:
    """One try of a sensor: pokes until done, timed out, or (reschedule mode) not done yet."""

    def __init__(
        self, function: Callable[..., Any], options: SensorOptions, context: dict[str, Any]
    ) -> None:
        self.function = function
        self.options = options
        self.task_id = context["ti"].task_id
        self.client = context["ti"].client
        # A clear starts a new generation: its timeout counts from its own first poke.
        details = getattr(self.client, "details", None)
        self.generation = getattr(details, "generation", 0)

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        started, pokes = self._first_poke()
        while True:
            result = self.function(*args, **kwargs)
            pokes += 1
            if _is_done(result):
                self._forget()
                return result.xcom_value if isinstance(result, PokeReturnValue) else None
            elapsed = _now() - started
            if elapsed >= self.options.timeout:
                self._forget()
                self._time_out(elapsed)
            # No poke after the timeout has passed: the last one lands on it.
            remaining = (self.options.timeout - elapsed).total_seconds()
            delay = min(self.options.delay(pokes), remaining)
            print(f"sensor {self.task_id}: not done after poke {pokes}; next in {delay:.3g}s")
            if self.options.mode == "reschedule":
                self._remember(started, pokes)
                raise Reschedule(_now() + dt.timedelta(seconds=delay))
            time.sleep(delay)

    def _first_poke(self) -> tuple[dt.datetime, int]:
        if self.options.mode == "poke":
            return _now(), 0
        kept = self.client.get_state(FIRST_POKE_KEY)
        if isinstance(kept, dict) and kept.get("generation") == self.generation:
            return dt.datetime.fromisoformat(kept["started_at"]), int(kept["pokes"])
        return _now(), 0

    def _remember(self, started: dt.datetime, pokes: int) -> None:
        value = {"generation": self.generation, "started_at": started.isoformat(), "pokes": pokes}
        self.client.set_state(FIRST_POKE_KEY, value, None)

    def _forget(self) -> None:
        if self.options.mode == "reschedule":
            self.client.delete_state(FIRST_POKE_KEY)

    def _time_out(self, elapsed: dt.timedelta) -> None:
        message = (
            f"sensor {self.task_id} timed out: not done after {elapsed.total_seconds():.1f}s "
            f"(timeout {self.options.timeout.total_seconds():g}s)"
        )
        if self.options.soft_fail:
            raise SkipTask(message)
        raise SensorTimeout(message)


def _is_done(result: Any) -> bool:
    if isinstance(result, PokeReturnValue):
        return result.is_done
    return bool(result)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
