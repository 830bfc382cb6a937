"""How a try ended, as its supervisor tells the store: one frozen value per way to end.

The supervisor builds one of these from the task's last message (``SucceedTask``, ``FailTask``,
``SkipTask``, ``RescheduleTask``, ``DeferTask``, ``AwaitInput``), or a ``Failed`` of its own when
the task could not say (timeout, killed, crashed, could not start);
``state.engine.try_life.record`` takes it as it is.
What the end means for the store (retry or fail, when the retry is due, the asset events, the plan)
is decided there, never by the worker: an outcome says only what happened.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Succeeded:
    """The task returned. ``asset_events``: the extras and alias resolutions it set on its
    outlets; ``follow``: what a branch or a short circuit chose (None for any other task)."""

    asset_events: tuple[dict[str, Any], ...] = ()
    follow: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """The try failed. ``retryable``: False when the task ruled out a retry (a retry policy, a
    fail-fast exception); ``retry_delay_seconds``: a retry policy's wait, None for the task's."""

    error: str
    retryable: bool = True
    retry_delay_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    """The task skipped itself; ``reason`` is recorded as the try's error line."""

    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Rescheduled:
    """A sensor in reschedule mode is not done: the same try pokes again at ``next_poke_at``."""

    next_poke_at: dt.datetime | None = None


@dataclass(frozen=True, slots=True)
class Deferred:
    """The task deferred (DESIGN.md §12): the same try resumes in ``method_name`` (with
    ``method_kwargs`` and the event) once the trigger ``classpath(**kwargs)`` fires, or fails
    when ``timeout_seconds`` pass first."""

    classpath: str
    kwargs: dict[str, Any]
    method_name: str
    method_kwargs: dict[str, Any]
    timeout_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class AwaitingInput:
    """A human-in-the-loop task asked a person (docs/hitl.md): the same try resumes in
    ``method_name`` with the answer as ``event``, or with its defaults once ``timeout_seconds``
    pass. ``question``: what ``state.engine.hitl.ask`` stores (subject, body, options, ...)."""

    method_name: str
    question: dict[str, Any]
    timeout_seconds: float | None = None


Outcome = Succeeded | Failed | Skipped | Rescheduled | Deferred | AwaitingInput
