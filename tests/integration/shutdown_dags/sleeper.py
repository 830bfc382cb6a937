"""A runtime task that sleeps without a word to its supervisor (the shutdown tests)."""

from __future__ import annotations

from tradewind import dag, task


@task.runtime(command=["sleep", "61"], retries=1, retry_delay=0)
def sleeper() -> None:
    """``sleep 61``: the supervisor's own child, not a fork server's."""


@dag(dag_id="runtime_sleeper")
def runtime_sleeper():
    sleeper()


runtime_sleeper()
