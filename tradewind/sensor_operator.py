"""``BaseSensorOperator``: the classic sensor, a ``BaseOperator`` subclass that defines ``poke``.

``poke(context)`` returns a bool or a ``PokeReturnValue``; ``execute`` pokes it with the same
``Poker`` as ``@task.sensor`` (``tradewind/sensors.py``), so both kinds share their modes, their
timeout kept across reschedules, ``soft_fail`` and the backoff. The sensor's own arguments
(``poke_interval``, ``timeout``, ``mode``, ``soft_fail``, ``exponential_backoff``, ``max_wait``)
are taken here; the rest (``task_id``, ``retries``, ``pool``...) are the operator's.
"""

from __future__ import annotations

from typing import Any

from tradewind.exceptions import DagDefinitionError
from tradewind.operators import BaseOperator
from tradewind.sensors import DEFAULT_POKE_INTERVAL, DEFAULT_TIMEOUT, Poker, sensor_options


class BaseSensorOperator(BaseOperator):
    """Subclass it and define ``poke(self, context)``.

    A sensor that can wait on the triggerer sets ``can_defer = True`` and overrides
    ``execute`` to ``self.defer(...)`` when ``self.deferrable``; any other refuses
    ``deferrable=True`` at load in one line.
    """

    can_defer: bool = False

    def __init__(
        self,
        *,
        poke_interval: Any = DEFAULT_POKE_INTERVAL,
        timeout: Any = DEFAULT_TIMEOUT,
        mode: str = "poke",
        soft_fail: bool = False,
        exponential_backoff: bool = False,
        max_wait: Any = None,
        deferrable: bool = False,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        if type(self).poke is BaseSensorOperator.poke:
            raise DagDefinitionError(f"{name} must define poke(self, context)")
        if deferrable and not self.can_defer:
            raise DagDefinitionError(
                f"{name} {kwargs.get('task_id', '')}: deferrable=True is not supported by this "
                "sensor (it has no trigger): use mode='reschedule' to free its slot"
            )
        self.deferrable = bool(deferrable)
        super().__init__(**kwargs)
        where = f"{name} {self.task_id}"
        self._waiting = sensor_options(
            poke_interval, timeout, mode, soft_fail, exponential_backoff, max_wait, where
        )
        # What Airflow's sensors expose, for a poke that reads them (seconds, as there).
        self.poke_interval = self._waiting.poke_interval.total_seconds()
        self.timeout = self._waiting.timeout.total_seconds()
        self.mode = self._waiting.mode
        self.soft_fail = self._waiting.soft_fail
        self.exponential_backoff = self._waiting.exponential_backoff

    def poke(self, context: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define poke(self, context)")

    def execute(self, context: dict[str, Any]) -> Any:
        """Poke until done: the ``PokeReturnValue``'s ``xcom_value`` is the task's XCom."""
        return Poker(self.poke, self._waiting, context).run((context,), {})
