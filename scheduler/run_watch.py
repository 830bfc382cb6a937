"""Which active runs a scheduler loop must pass over: those where something may have changed.

A pass over a run costs a handful of statements even when nothing happened, and with 50 active
runs and three schedulers that was most of a 2-core machine. So each loop first reads, in one
aggregate statement, how many task instances of each active run are in each state; a run whose
counts are what they were at this scheduler's last pass over it, with no scheduled task
instance waiting for a slot, no retry due, no version change and not waiting to start, has
nothing new to decide and is skipped.

A fingerprint is remembered only for a pass that ran (it held the run's lock), and it is the
one read *before* the pass: whatever commits during or after the pass changes the counts, so
the next loop looks again. Supervisors still pass over their own run when a try ends; this only
spares the loop its idle passes.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from state.core import (
    ACTIVE,
    WAITING_FOR_TIME,
    DagModel,
    DagRun,
    DagRunState,
    TaskInstance,
    TaskInstanceState,
)

TI = TaskInstanceState
Fingerprint = frozenset[tuple[str, int]]


@dataclass
class RunView:
    run_pk: int
    fingerprint: Fingerprint
    must_pass: bool
    # The highest weight of the run's tries waiting for a slot (0: none waits).
    waiting_weight: int = 0


@dataclass
class RunWatch:
    """This scheduler's memory of the runs it passed over: run pk -> counts at that pass."""

    seen: dict[int, Fingerprint] = field(default_factory=dict)

    def to_pass(self, session: Session, now: dt.datetime) -> list[RunView]:
        # The runs whose waiting tries weigh most first: their passes take free slots first.
        views = sorted(_active_runs(session, now), key=lambda v: (-v.waiting_weight, v.run_pk))
        live = {view.run_pk for view in views}
        for gone in self.seen.keys() - live:
            del self.seen[gone]  # finished (or paused): forget it
        return [v for v in views if v.must_pass or self.seen.get(v.run_pk) != v.fingerprint]

    def passed(self, view: RunView) -> None:
        self.seen[view.run_pk] = view.fingerprint


def _active_runs(session: Session, now: dt.datetime) -> list[RunView]:
    same_version = (DagRun.version_hash == DagModel.version_hash).label("same_version")
    rows = session.execute(
        select(
            DagRun.id,
            DagRun.state,
            same_version,
            TaskInstance.state,
            func.count(TaskInstance.id),
            func.min(TaskInstance.next_retry_at),
            func.max(TaskInstance.priority_weight),
        )
        .join(DagModel, DagModel.dag_id == DagRun.dag_id)
        .outerjoin(
            TaskInstance,
            and_(TaskInstance.dag_id == DagRun.dag_id, TaskInstance.run_id == DagRun.run_id),
        )
        .where(
            DagRun.state.in_([DagRunState.QUEUED, DagRunState.RUNNING]),
            DagModel.is_paused.is_(False),
        )
        .group_by(DagRun.id, DagRun.state, same_version, TaskInstance.state)
        .order_by(DagRun.id)
    ).all()
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    must: dict[int, bool] = {}
    weights: dict[int, int] = {}
    for run_pk, run_state, same, ti_state, count, next_retry, weight in rows:
        if ti_state == TI.SCHEDULED:
            weights[run_pk] = weight
        # A claim (queued -> running) decides nothing: both count as one.
        counts[run_pk]["active" if ti_state in ACTIVE else str(ti_state)] += count
        urgent = (
            run_state == DagRunState.QUEUED  # waiting for max_active_runs
            or not same  # a new DAG version: verify_integrity
            or ti_state == TI.SCHEDULED  # waiting for a slot that may be free now
            or (ti_state in WAITING_FOR_TIME and next_retry is not None and next_retry <= now)
        )
        must[run_pk] = must.get(run_pk, False) or bool(urgent)
    return [
        RunView(pk, frozenset(counts[pk].items()), must[pk], weights.get(pk, 0)) for pk in counts
    ]
