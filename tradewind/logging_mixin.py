"""``LoggingMixin``: a ``log`` attribute whose lines reach the task's log.

Airflow's hooks and operators log through ``self.log``. In a task process the root logger writes
to the try's log (``worker/process.py``), so a logger named after the class is all it takes.
"""

from __future__ import annotations

import logging


class LoggingMixin:
    """Gives ``self.log`` (and ``cls.logger()``): a logger named after the class."""

    _log: logging.Logger | None = None
    _logger_name: str | None = None

    @classmethod
    def logger(cls) -> logging.Logger:
        return logging.getLogger(cls._logger_name or f"{cls.__module__}.{cls.__name__}")

    @property
    def log(self) -> logging.Logger:
        found = self.__dict__.get("_log")
        if found is None:
            name = self.__dict__.get("_logger_name")
            found = logging.getLogger(name) if name else self.logger()
            self.__dict__["_log"] = found
        return found
