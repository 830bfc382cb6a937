"""Pausing and unpausing a DAG: a paused DAG gets no new runs and none of its runs is scheduled.

Tries already queued or running when a DAG is paused finish as they would have; nothing new is
queued until it is unpaused. With ``catchup=False`` the intervals that ended meanwhile are
skipped on unpause (the scheduler runs only the latest); with ``catchup=True`` they all run.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from state.core import DagModel


class NoSuchDag(LookupError):
    """No DAG with that id is in the store."""


def set_paused(session: Session, dag_id: str, paused: bool) -> bool:
    """Pause or unpause ``dag_id``; returns whether it was paused before."""
    model = session.get(DagModel, dag_id, with_for_update=True)
    if model is None:
        raise NoSuchDag(f"no DAG named {dag_id!r}: see `tradewind dags list`")
    was = bool(model.is_paused)
    values: dict[str, object] = {"is_paused": paused}
    if was and not paused:
        # Its next run is asked for afresh: without catchup, none for the time it was paused.
        values["next_dagrun_after"] = None
    session.execute(update(DagModel).where(DagModel.dag_id == dag_id).values(**values))
    return was
