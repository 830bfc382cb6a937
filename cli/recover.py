"""What ``tasks clear``, ``tasks mark`` and ``runs mark`` share: the scope flags, naming what
changes, asking before changing it, and applying the plan (``state.engine.recover``).
"""

from __future__ import annotations

from typing import Annotated

import click
import typer

from cli.common import fail
from state.core import NotFound, Session
from state.engine import (
    BadScope,
    MarkerDepthExceeded,
    Plan,
    Purgers,
    Scope,
    UnknownDag,
    UnknownTask,
    apply_plan,
)

REFUSED = (BadScope, NotFound, UnknownDag, UnknownTask, MarkerDepthExceeded)

Upstream = Annotated[bool, typer.Option("--upstream", help="Also every task upstream.")]
Downstream = Annotated[bool, typer.Option("--downstream", help="Also every task downstream.")]
Past = Annotated[bool, typer.Option("--past", help="Also in the runs with earlier logical dates.")]
Future = Annotated[
    bool, typer.Option("--future", help="Also in the runs with later logical dates.")
]
OnlyFailed = Annotated[
    bool, typer.Option("--only-failed", help="Only failed and upstream_failed task instances.")
]
OnlyRunning = Annotated[bool, typer.Option("--only-running", help="Only running task instances.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Name what would change; change nothing.")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before changing.")]


def scope(
    upstream: bool = False,
    downstream: bool = False,
    past: bool = False,
    future: bool = False,
    only_failed: bool = False,
    only_running: bool = False,
) -> Scope:
    return Scope(upstream, downstream, past, future, only_failed, only_running)


def describe(plan: Plan, verb: str) -> str:
    """The lines naming what ``plan`` changes: one per run marked, one per task instance."""
    count = len(plan.changes)
    noun = "task instance" if count == 1 else "task instances"
    lines = [f"{run.dag_id} run {run.run_id}: {run.state} -> {to}" for run, to in plan.runs_marked]
    lines.append(f"{count} {noun} will be {verb}:" if count else f"no task instance to {verb}")
    for change in plan.changes:
        ti = change.ti
        index = f"[{ti.map_index}]" if ti.map_index >= 0 else ""
        lines.append(
            f"  {ti.dag_id} {ti.run_id} {ti.task_id}{index}: {ti.state} -> {change.to_state}"
        )
    return "\n".join(lines)


def confirm_and_apply(
    session: Session,
    plan: Plan,
    verb: str,
    flags: tuple[bool, bool],
    purgers: Purgers | None = None,
    keep_state: bool = False,
) -> int:
    """Print what changes; unless ``--dry-run``, ask (unless ``--yes``) and apply. Returns how
    many task instances moved."""
    dry_run, yes = flags
    typer.echo(describe(plan, verb))
    if dry_run or not (plan.changes or plan.runs_marked):
        return 0
    if not yes:
        try:
            typer.confirm("Go ahead?", abort=True, err=True)
        except (typer.Abort, click.exceptions.Abort):  # no, or no terminal to answer on
            fail("nothing changed (answer y, or pass --yes)")
    try:
        return len(apply_plan(session, plan, None, purgers, keep_state=keep_state))
    except REFUSED as error:
        fail(str(error))
