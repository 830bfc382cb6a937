"""Exceptions DAG authors raise or see; Airflow's names are aliases of ours."""

from __future__ import annotations

import datetime as dt
from typing import Any


class TradewindError(Exception):
    """Base of Tradewind's own errors."""


class DagDefinitionError(TradewindError):
    """A DAG is malformed: a cycle, an unknown dependency, a duplicate task id, a bad setting."""


class SkipTask(TradewindError):  # no -Error suffix: named like Airflow's AirflowSkipException
    """Raise inside a task to end it (or one item of an iterable task) as ``skipped``."""


class FailTask(TradewindError):
    """Raise inside a task to fail it now, without using its remaining retries."""


class TaskNotFound(TradewindError):
    """A DAG or task named by a message or a command is not in the DAG files."""


AirflowSkipException = SkipTask
AirflowFailException = FailTask


class AirflowException(TradewindError):
    """Airflow's base exception: raising it in a task fails the try, as any exception does."""


class AirflowNotFoundException(AirflowException):
    """Something a task looked up (a connection, a variable) does not exist."""


class TaskInstanceNotFound(AirflowNotFoundException):
    """A task instance a provider looked for does not exist."""


class AirflowBadRequest(AirflowException):
    """A request a task made was refused."""


class AirflowTaskTimeout(AirflowException):
    """A try ran past its ``execution_timeout``."""


class AirflowSensorTimeout(AirflowException):
    """A sensor waited past its ``timeout``."""


class AirflowConfigException(AirflowException):
    """A setting cannot be used."""


class AirflowOptionalProviderFeatureException(AirflowException):
    """A provider's feature needs a package that is not installed."""


class AirflowProviderDeprecationWarning(DeprecationWarning):
    """A provider's name or argument is deprecated (a warning, as in Airflow)."""

    deprecated_provider_since: str | None = None


class RemovedInAirflow4Warning(DeprecationWarning):
    """Something Airflow 4 removes (a warning, as in Airflow)."""


class TaskAwaitingInput(TradewindError):
    """Raised by a human-in-the-loop task to wait for a person's answer (docs/hitl.md): the try
    ends ``awaiting_input`` with ``question``, and resumes in ``method_name`` with the answer as
    ``event`` (or its defaults once ``timeout`` passes)."""

    def __init__(
        self,
        *,
        method_name: str = "execute_complete",
        timeout: dt.timedelta | float | None = None,
        question: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(timeout, dt.timedelta):
            timeout = timeout.total_seconds()
        self.method_name = method_name
        self.timeout = float(timeout) if timeout else None
        self.question = dict(question or {})
        super().__init__(f"awaiting input, resuming in {method_name}")
