"""DAGs that defer, for tests/integration/test_triggerer_fleet.py.

``GateTrigger`` is defined here, in the DAG file: the triggerer imports it as the worker imports
DAG files. It fires once the file ``gate`` exists (a cheap check, no thread), so a test decides
when hundreds of deferred tasks wake, with no clock involved.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from airflow.sdk import DAG, BaseOperator, BaseTrigger, TaskDeferred, TriggerEvent, task

from tradewind.triggers.base import classpath_of


class GateTrigger(BaseTrigger):
    def __init__(self, gate: str, label: Any = None, poke: float = 0.25) -> None:
        super().__init__()
        self.gate, self.label, self.poke = gate, label, poke

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return classpath_of(GateTrigger), {
            "gate": self.gate,
            "label": self.label,
            "poke": self.poke,
        }

    async def run(self):  # type: ignore[no-untyped-def]
        while not os.path.exists(self.gate):
            await asyncio.sleep(self.poke)
        yield TriggerEvent({"label": self.label})


class WaitAtGate(BaseOperator):
    """A classic operator that defers with self.defer and resumes in execute_complete."""

    template_fields = ("gate",)

    def __init__(self, *, gate: str, timeout: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate
        self.wait_timeout = timeout

    def execute(self, context: dict[str, Any]) -> None:
        self.defer(
            trigger=GateTrigger(self.gate, label=self.task_id),
            method_name="execute_complete",
            kwargs={"note": "kept"},
            timeout=self.wait_timeout,
        )

    def execute_complete(self, context: dict[str, Any], event: Any = None, note: str = "") -> str:
        return f"{event['label']} {note} try {context['ti'].try_number}"


with DAG("deferred_many", schedule=None, max_active_tasks=1000):

    @task
    def items(params: dict[str, Any] | None = None) -> list[int]:
        return list(range(int((params or {}).get("count", 500))))

    @task(max_active_tis_per_dagrun=1000)
    def wait(i: int, params: dict[str, Any] | None = None, event: Any = None) -> Any:
        if event is None:
            raise TaskDeferred(
                trigger=GateTrigger(params["gate"], label=i, poke=0.5), method_name="execute"
            )
        return event["label"]

    @task
    def total(values: list[int]) -> int:
        return sum(values)

    total(wait.expand(i=items()))


with DAG("busy", schedule=None):

    @task
    def step(i: int) -> int:
        return i

    step.expand(i=list(range(10)))


with DAG("deferred_operator", schedule=None):
    WaitAtGate(task_id="at_gate", gate="{{ params.gate }}")


with DAG("deferred_timeout", schedule=None):
    WaitAtGate(task_id="times_out", gate="{{ params.gate }}", timeout=1.0)
