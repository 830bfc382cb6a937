"""``tradewind dags pause DAG_ID`` / ``tradewind dags unpause DAG_ID``.

Register on the ``dags`` group: ``app.command("pause")(pause)`` and
``app.command("unpause")(unpause)`` (cli/dags.py).
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import fail, settings_or_exit
from cli.store import open_store
from state.core import session_scope
from state.records import About, Actor, NoSuchDag, record_event, set_paused

DagId = Annotated[str, typer.Argument(help="The DAG's id.")]


def pause(dag_id: DagId) -> None:
    """Pause a DAG: no new runs are created or scheduled until it is unpaused."""
    _set(dag_id, paused=True)


def unpause(dag_id: DagId) -> None:
    """Unpause a DAG: its runs are scheduled again (missed intervals run only with catchup)."""
    _set(dag_id, paused=False)


def _set(dag_id: str, paused: bool) -> None:
    url = open_store(settings_or_exit())
    try:
        with session_scope(url) as session:
            was = set_paused(session, dag_id, paused)
            extra = {"is_paused": paused}
            record_event(session, Actor.cli(), "patch_dag", About(dag_id=dag_id), extra)
    except NoSuchDag as error:
        fail(str(error))
    word = "paused" if paused else "unpaused"
    note = "" if was != paused else f" (it was already {word})"
    typer.echo(f"DAG {dag_id} {word}{note}")
