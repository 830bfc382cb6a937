"""How long a failed try waits before the next one: a pure function of the task's structure.

``retry_delay_seconds`` alone, or with ``retry_exponential_backoff`` (a factor, 2 for Airflow's
``True``) that delay times the factor to the power of the tries already failed before this one,
capped by ``max_retry_delay_seconds`` (a day when unset, as Airflow caps it). No jitter: two
task instances failing together retry together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from state.core import TaskSpec

MAX_BACKOFF_SECONDS: Final = 24 * 3600.0


def retry_delay_seconds(spec: TaskSpec, try_number: int) -> float:
    """The wait after try ``try_number`` (1 for the first) of the task ``spec`` failed."""
    delay = spec.retry_delay_seconds
    factor = spec.retry_exponential_backoff
    if factor <= 1:
        return delay
    cap = spec.max_retry_delay_seconds or MAX_BACKOFF_SECONDS
    # Capped before the power overflows a float on a task with many retries.
    exponent = min(max(try_number - 1, 0), 64)
    return float(min(delay * factor**exponent, float(cap)))
