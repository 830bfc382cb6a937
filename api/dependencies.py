"""Why a task instance is not running yet: Airflow's ``dependencies`` of a task instance.

A pure function over what the store says (the task instance, its run, the DAG's paused flag,
its upstream states, its pool's use), so it is tested without a database and costs the route a
fixed number of queries whatever the run's size.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from state.core import (
    ACTIVE,
    FINISHED,
    WAITING_FOR_TIME,
    DagRunState,
    TaskInstance,
    TaskInstanceState,
)
from state.engine import decide
from state.views import PoolUse

TI = TaskInstanceState


@dataclass(frozen=True)
class Blocker:
    name: str
    reason: str


@dataclass(frozen=True)
class Situation:
    ti: TaskInstance
    run_state: DagRunState
    dag_paused: bool
    trigger_rule: str
    upstream: Sequence[TaskInstanceState]
    pool: PoolUse | None


def blockers(situation: Situation, now: dt.datetime) -> list[Blocker]:
    """What holds the task instance back, in the order it would have to clear."""
    ti = situation.ti
    state = TI(ti.state)
    if state in FINISHED or state in ACTIVE:
        verb = "has finished" if state in FINISHED else "is already"
        return [Blocker("Task Instance State", f"the task instance {verb} {state}")]
    found = []
    if situation.dag_paused:
        found.append(Blocker("DAG Not Paused", f"DAG {ti.dag_id!r} is paused"))
    if situation.run_state not in (DagRunState.RUNNING, DagRunState.QUEUED):
        found.append(Blocker("Dag Run State", f"the run has ended {situation.run_state}"))
    if state in WAITING_FOR_TIME and ti.next_retry_at and ti.next_retry_at > now:
        what = "poke" if state == TI.UP_FOR_RESCHEDULE else "try"
        found.append(
            Blocker("Not In Retry Period", f"the next {what} is due at {ti.next_retry_at}")
        )
    if state == TI.DEFERRED:
        reason = "the task is deferred: it resumes when its trigger fires in the triggerer"
        found.append(Blocker("Task Deferred", reason))
    if state == TI.AWAITING_INPUT:
        reason = "the task waits for a person's answer: give it on this page or the API"
        found.append(Blocker("Awaiting Input", reason))
    if state == TI.NONE:
        found += _upstream_blockers(situation)
    if state == TI.SCHEDULED and situation.pool is not None and situation.pool.open == 0:
        pool = situation.pool
        reason = f"pool {pool.name!r} has no open slot ({pool.occupied} of {pool.slots} in use)"
        found.append(Blocker("Pool Slots Available", reason))
    return found


def _upstream_blockers(situation: Situation) -> list[Blocker]:
    upstream = Counter(situation.upstream)
    total = len(situation.upstream)
    if decide(situation.trigger_rule, upstream, total) is not None:
        return []
    done = sum(upstream[state] for state in FINISHED)
    reason = (
        f"{done} of {total} upstream task instances are done; "
        f"trigger rule {situation.trigger_rule} waits for more"
    )
    return [Blocker("Trigger Rule", reason)]
