"""What the UI's home page shows besides the components' health: a few statements, each bounded
whatever the history holds.

- DAGs with a running run: from the state index (running runs are few), ``shown`` of them named.
- DAGs with a run failed in the last ``window``, and the runs of that window counted by state:
  read among the newest ``RECENT_RUNS`` runs only (a range of the primary key), so a store of
  a million runs costs what a store of ten thousand does. A day with more runs than that is
  counted over its newest ``RECENT_RUNS`` (``HomeFacts.runs_capped`` says so).
- The newest runs and asset events: ``ORDER BY id DESC LIMIT``; import errors: one count.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from state.core import Asset, AssetEvent, DagImportError, DagModel, DagRun, DagRunState

#: How many of the newest runs the day's counts and failed DAGs are read from.
RECENT_RUNS = 10_000


@dataclass(frozen=True)
class DagsIn:
    """The DAGs with a run in some state: how many, and the first ``shown`` by id."""

    total: int
    dag_ids: tuple[str, ...]


@dataclass(frozen=True)
class RecentRun:
    dag_id: str
    run_id: str
    state: str
    run_type: str
    created_at: dt.datetime
    start_date: dt.datetime | None
    end_date: dt.datetime | None


@dataclass(frozen=True)
class RecentEvent:
    id: int
    asset_id: int
    uri: str
    name: str
    source_dag_id: str | None
    source_run_id: str | None
    timestamp: dt.datetime


@dataclass(frozen=True)
class HomeFacts:
    running: DagsIn
    failed: DagsIn
    active_dags: int
    import_errors: int
    run_states: dict[str, int]
    runs_capped: bool
    runs: list[RecentRun]
    events: list[RecentEvent]


def home_facts(
    session: Session, now: dt.datetime, window: dt.timedelta, shown: int = 10
) -> HomeFacts:
    """Everything the home page lists, for runs since ``now - window``."""
    since = now - window
    recent = _newest_runs()
    states = _run_states(session, recent, since)
    return HomeFacts(
        running=_dags_in(session, [DagRun.state == DagRunState.RUNNING], shown),
        failed=_dags_in(
            session, [recent, DagRun.state == DagRunState.FAILED, DagRun.end_date >= since], shown
        ),
        active_dags=_active_dags(session),
        import_errors=session.scalar(select(func.count()).select_from(DagImportError)) or 0,
        run_states=states,
        runs_capped=sum(states.values()) >= RECENT_RUNS,
        runs=_latest_runs(session, shown),
        events=_latest_events(session, shown),
    )


def _newest_runs() -> ColumnElement[bool]:
    newest = select(func.max(DagRun.id)).scalar_subquery()
    return DagRun.id > newest - RECENT_RUNS


def _dags_in(session: Session, where: list[ColumnElement[bool]], shown: int) -> DagsIn:
    total = session.scalar(select(func.count(func.distinct(DagRun.dag_id))).where(*where)) or 0
    names = session.scalars(
        select(DagRun.dag_id).where(*where).group_by(DagRun.dag_id).order_by(DagRun.dag_id)
    )
    return DagsIn(total, tuple(names.fetchmany(shown)))


def _run_states(
    session: Session, recent: ColumnElement[bool], since: dt.datetime
) -> dict[str, int]:
    query = (
        select(DagRun.state, func.count())
        .where(recent, DagRun.created_at >= since)
        .group_by(DagRun.state)
    )
    return {str(state): count for state, count in session.execute(query)}


def _active_dags(session: Session) -> int:
    query = select(func.count()).where(DagModel.is_active.is_(True), DagModel.is_paused.is_(False))
    return session.scalar(query) or 0


def _latest_runs(session: Session, limit: int) -> list[RecentRun]:
    query = select(
        DagRun.dag_id,
        DagRun.run_id,
        DagRun.state,
        DagRun.run_type,
        DagRun.created_at,
        DagRun.start_date,
        DagRun.end_date,
    ).order_by(DagRun.id.desc())
    return [RecentRun(*row) for row in session.execute(query.limit(limit))]


def _latest_events(session: Session, limit: int) -> list[RecentEvent]:
    query = (
        select(
            AssetEvent.id,
            AssetEvent.asset_id,
            Asset.uri,
            Asset.name,
            AssetEvent.source_dag_id,
            AssetEvent.source_run_id,
            AssetEvent.timestamp,
        )
        .join(Asset, Asset.id == AssetEvent.asset_id)
        .order_by(AssetEvent.id.desc())
        .limit(limit)
    )
    return [RecentEvent(*row) for row in session.execute(query)]
