"""``airflow.triggers.base``'s names, so provider modules that define triggers import.

A provider module often defines its deferrable operator's trigger beside the operator
(``HttpTrigger`` in ``http.triggers.http``, imported by ``HttpOperator``'s module): these are the
bases such classes need to be defined. Running a trigger is the triggerer's work (DESIGN §12);
until it runs them, a provider operator used with ``deferrable=True`` fails its try in one line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from tradewind.logging_mixin import LoggingMixin


class TriggerEvent:
    """What a trigger yields when the condition it waits for happens."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload

    def __repr__(self) -> str:
        return f"TriggerEvent<{self.payload!r}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TriggerEvent) and other.payload == self.payload

    __hash__ = None  # type: ignore[assignment]


class BaseTrigger(LoggingMixin):
    """The base of a provider's triggers: ``serialize()`` and ``async run()``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.task_instance: Any = None
        self.trigger_id: int | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__} must define serialize()")

    async def run(self) -> AsyncIterator[TriggerEvent]:
        raise NotImplementedError(f"{type(self).__name__} must define run()")
        yield  # pragma: no cover

    async def cleanup(self) -> None:
        return None

    def __repr__(self) -> str:
        classpath, kwargs = self.serialize()
        arguments = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        return f"<{classpath} {arguments}>"


class BaseEventTrigger(BaseTrigger):
    """A trigger that may also drive an asset's events (Airflow 3's event-driven scheduling)."""
