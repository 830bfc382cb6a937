"""What ``/metrics`` reads of the store at scrape time: the fleet's reports, and what is now.

Five statements per scrape, each bounded whatever the history's size: the ``metric`` table (one
row per series and bucket, and per live process for gauges: a few hundred rows), the task
instances queued and running (counted on the state index), the pools' slots (the pools and the
task instances counted in them: active ones only), and the import errors.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from state.core import DagImportError, MetricValue, TaskInstance, TaskInstanceState
from state.views.listing import PoolUse, all_pool_uses

#: More pools than this are not reported (each is four series of every scrape).
MAX_POOLS = 1000
_NOW_COUNTED = (TaskInstanceState.QUEUED, TaskInstanceState.RUNNING)


@dataclass(frozen=True)
class Reported:
    """One row of ``metric``: a series (or a histogram's bucket) and its value."""

    name: str
    labels: str
    bucket: str
    value: float


@dataclass(frozen=True)
class FleetNow:
    """What a scrape reads: the processes' reports and the store's counts of now."""

    reported: list[Reported]
    task_instances: dict[str, int]  # queued / running
    pools: list[PoolUse]
    import_errors: int


def read_fleet(session: Session, fresh_since: dt.datetime) -> FleetNow:
    """The store's side of a scrape: gauges of processes silent since ``fresh_since`` left out."""
    return FleetNow(
        reported=reported_metrics(session, fresh_since),
        task_instances=count_task_instances_now(session),
        pools=all_pool_uses(session, MAX_POOLS),
        import_errors=session.scalar(select(func.count()).select_from(DagImportError)) or 0,
    )


def reported_metrics(session: Session, fresh_since: dt.datetime) -> list[Reported]:
    """The fleet's totals, and the sum of each gauge over the processes that beat lately."""
    m = MetricValue
    query = (
        select(m.name, m.labels, m.bucket, func.sum(m.value))
        .where(or_(m.process == "", m.updated_at >= fresh_since))
        .group_by(m.name, m.labels, m.bucket)
    )
    return [
        Reported(name, labels, bucket, float(value))
        for name, labels, bucket, value in session.execute(query)
    ]


def count_task_instances_now(session: Session) -> dict[str, int]:
    query = (
        select(TaskInstance.state, func.count())
        .where(TaskInstance.state.in_(_NOW_COUNTED))
        .group_by(TaskInstance.state)
    )
    counts = {str(state): 0 for state in _NOW_COUNTED}
    counts.update({str(state): n for state, n in session.execute(query)})
    return counts
