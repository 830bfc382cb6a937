"""Retry policies: what a failure's exception decides about the next try (Airflow 3.3's
``ExceptionRetryPolicy``, ``RetryRule``, ``RetryAction``).

The policy runs in the task process, where the exception is: the first rule whose exception
matches (the class or a base of it, given as a class or a dotted name, so a DAG file need not
import the library) says to retry (after its own ``retry_delay``, if it has one), to fail at
once, or to leave the decision to the task's ``retries`` and ``retry_delay``. No rule matching
is the last case.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum

from tradewind.exceptions import DagDefinitionError
from tradewind.task import as_timedelta


class RetryAction(StrEnum):
    RETRY = "retry"
    FAIL = "fail"
    DEFAULT = "default"


@dataclass(frozen=True)
class RetryRule:
    """One exception and what its failures do."""

    exception: str | type[BaseException]
    action: RetryAction = RetryAction.RETRY
    retry_delay: dt.timedelta | float | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        is_class = isinstance(self.exception, type) and issubclass(self.exception, BaseException)
        if not is_class and not (isinstance(self.exception, str) and self.exception):
            raise DagDefinitionError(
                f"RetryRule(exception=...) takes an exception class or its dotted name, "
                f"got {self.exception!r}"
            )
        object.__setattr__(self, "action", RetryAction(self.action))
        object.__setattr__(self, "retry_delay", as_timedelta(self.retry_delay, "retry_delay"))

    def matches(self, error: BaseException) -> bool:
        if isinstance(self.exception, type):
            return isinstance(error, self.exception)
        names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(error).__mro__}
        return self.exception in names or self.exception == type(error).__name__


@dataclass(frozen=True)
class RetryDecision:
    """What the matching rule decided: ``retryable``, and the delay when the rule gives one."""

    retryable: bool
    retry_delay_seconds: float | None
    reason: str | None


class ExceptionRetryPolicy:
    """Rules tried in order against a failure's exception."""

    def __init__(self, rules: list[RetryRule]) -> None:
        if not rules or not all(isinstance(rule, RetryRule) for rule in rules):
            raise DagDefinitionError("ExceptionRetryPolicy(rules=[...]) takes RetryRule()s")
        self.rules = list(rules)

    def evaluate(self, error: BaseException) -> RetryDecision | None:
        """The decision of the first rule that matches and is not DEFAULT; None otherwise."""
        for rule in self.rules:
            if not rule.matches(error):
                continue
            if rule.action is RetryAction.DEFAULT:
                return None
            delay = rule.retry_delay
            seconds = delay.total_seconds() if isinstance(delay, dt.timedelta) else None
            return RetryDecision(rule.action is RetryAction.RETRY, seconds, rule.reason)
        return None
