"""``EmptyOperator`` (and Airflow 2's ``DummyOperator``): a task that does nothing.

It groups or joins other tasks; its trigger rule decides whether it succeeds or is skipped.
"""

from __future__ import annotations

from typing import Any

from tradewind.operators import BaseOperator
from tradewind.spellings import airflow2_spelling


class EmptyOperator(BaseOperator):
    """``EmptyOperator(task_id=...)``: succeeds at once when its trigger rule lets it run."""

    def execute(self, context: dict[str, Any]) -> None:
        return None


class DummyOperator(EmptyOperator):
    """Airflow 2's name of ``EmptyOperator``: accepted, with the one warning line of its file."""

    def __init__(self, **kwargs: Any) -> None:
        airflow2_spelling("DummyOperator", "EmptyOperator")
        super().__init__(**kwargs)


class SmoothOperator(BaseOperator):
    """The provider's joke operator: it logs a link to Sade's song."""

    yt_link = "https://www.youtube.com/watch?v=4TYv2PhG89A"

    def execute(self, context: dict[str, Any]) -> None:
        print(f"Enjoy Sade - Smooth Operator: {self.yt_link}", flush=True)
