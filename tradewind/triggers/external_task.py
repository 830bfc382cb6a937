"""``WorkflowTrigger`` and ``DagStateTrigger``: wait on other DAGs' runs (the standard
provider's), what ``ExternalTaskSensor`` and ``TriggerDagRunOperator`` defer on.

They ask the store through the triggerer (``tradewind.triggers.services.cross_dag``), on a
thread, every ``poke_interval`` seconds.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Iterable
from typing import Any

from tradewind.triggers.base import BaseTrigger, TriggerEvent, classpath_of
from tradewind.triggers.services import cross_dag


def _dates(logical_dates: Iterable[Any] | None) -> list[dt.datetime]:
    found = []
    for value in logical_dates or ():
        moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
        found.append(moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC))
    return found


class WorkflowTrigger(BaseTrigger):
    """Fire when the watched runs (or their tasks, or task group) of ``external_dag_id`` at
    ``logical_dates`` are all in ``allowed_states`` (payload ``{"status": "success"}``), or as
    soon as one is in ``failed_states`` (``"failed"``) or ``skipped_states`` (``"skipped"``)."""

    def __init__(
        self,
        external_dag_id: str,
        run_ids: list[str] | None = None,
        execution_dates: list[Any] | None = None,
        logical_dates: list[Any] | None = None,
        external_task_ids: Iterable[str] | None = None,
        external_task_group_id: str | None = None,
        failed_states: Iterable[str] | None = None,
        skipped_states: Iterable[str] | None = None,
        allowed_states: Iterable[str] | None = None,
        poke_interval: float = 2.0,
        soft_fail: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.external_dag_id = external_dag_id
        self.run_ids = list(run_ids or [])
        self.logical_dates = _dates(logical_dates or execution_dates)
        self.external_task_ids = list(external_task_ids or [])
        self.external_task_group_id = external_task_group_id
        self.failed_states = list(failed_states or [])
        self.skipped_states = list(skipped_states or [])
        self.allowed_states = list(allowed_states or ["success"])
        self.poke_interval = float(poke_interval)
        self.soft_fail = bool(soft_fail)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return classpath_of(WorkflowTrigger), {
            "external_dag_id": self.external_dag_id,
            "run_ids": self.run_ids,
            "logical_dates": self.logical_dates,
            "external_task_ids": self.external_task_ids,
            "external_task_group_id": self.external_task_group_id,
            "failed_states": self.failed_states,
            "skipped_states": self.skipped_states,
            "allowed_states": self.allowed_states,
            "poke_interval": self.poke_interval,
            "soft_fail": self.soft_fail,
        }

    def _count(self, states: list[str]) -> float:
        from tradewind.standard.external_task import count_in_states

        return count_in_states(
            cross_dag(),
            self.external_dag_id,
            self.external_task_ids,
            self.external_task_group_id,
            self.logical_dates,
            states,
        )

    def _status(self) -> str | None:
        if self.failed_states and self._count(self.failed_states) > 0:
            return "failed"
        if self.skipped_states and self._count(self.skipped_states) > 0:
            return "skipped"
        if self._count(self.allowed_states) == len(self.logical_dates):
            return "success"
        return None

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            status = await asyncio.to_thread(self._status)
            if status is not None:
                yield TriggerEvent({"status": status})
                return
            await asyncio.sleep(self.poke_interval)


class DagStateTrigger(BaseTrigger):
    """Fire when every run of ``dag_id`` in ``run_ids`` is in one of ``states``; the payload
    maps each run id to its state."""

    def __init__(
        self,
        dag_id: str,
        states: Iterable[str],
        run_ids: list[str] | None = None,
        execution_dates: list[Any] | None = None,
        poll_interval: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.dag_id = dag_id
        self.states = [str(getattr(s, "value", s)) for s in states]
        self.run_ids = list(run_ids or [])
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return classpath_of(DagStateTrigger), {
            "dag_id": self.dag_id,
            "states": self.states,
            "run_ids": self.run_ids,
            "poll_interval": self.poll_interval,
        }

    def _states(self) -> dict[str, str | None]:
        client = cross_dag()
        return {run_id: client.get_dag_run_state(self.dag_id, run_id) for run_id in self.run_ids}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            found = await asyncio.to_thread(self._states)
            if all(state in self.states for state in found.values()):
                yield TriggerEvent({"dag_id": self.dag_id, "run_states": found})
                return
            await asyncio.sleep(self.poll_interval)
