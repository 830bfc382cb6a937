"""Finding and following the log file of one try (``tradewind tasks logs``).

Logs are files on the host that ran the try (DESIGN.md §7): ``TRADEWIND_HOME/logs/<dag>/<run>/
<task>/<map_index>/<try>.log``. Following reads what was appended since the last read, for as
long as the store says that try is still queued or running.
"""

from __future__ import annotations

import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import typer

from cli.common import fail
from cli.store import get_run
from cli.watch import POLL_SECONDS
from state.core import ACTIVE, FINISHED, NotFound, session_scope
from state.records import TIKey as StoreKey
from state.views import get_task_instance, task_instance_by_id
from tradewind.settings import Settings
from worker.supervisor.logs import log_path

#: (dag_id, run_id, task_id, map_index)
TIKey = tuple[str, str, str, int]
_PRINT_BYTES = 1024 * 1024


@dataclass(frozen=True)
class LogTarget:
    """One try's log file and the task instance it belongs to."""

    path: Path
    ti_id: int
    try_number: int
    key: TIKey

    def describe(self) -> str:
        dag_id, run_id, task_id, map_index = self.key
        index = f"[{map_index}]" if map_index >= 0 else ""
        return f"{dag_id}/{run_id}/{task_id}{index} try {self.try_number}"


def resolve_log(
    settings: Settings, url: str, key: TIKey, try_number: int | None, wait: bool = False
) -> LogTarget:
    """The log of try ``try_number`` (default: the latest) of a task instance.

    ``wait``: a task instance that has not started that try yet is waited for (while it can still
    start one), saying so once on stderr.
    """
    dag_id, run_id, task_id, map_index = key
    wanted, said = try_number or 1, False
    while True:
        with session_scope(url) as session:
            get_run(session, dag_id, run_id)
            try:
                ti = get_task_instance(session, StoreKey(dag_id, run_id, task_id, map_index)).ti
            except NotFound as error:
                fail(str(error))
            latest, ti_id, state = ti.try_number, ti.id, ti.state
        if not wait or latest >= wanted:
            break
        if state in FINISHED:
            fail(f"{dag_id}/{run_id}/{task_id} ended {state} without a try {wanted}")
        if not said:
            where = f"{dag_id}/{run_id}/{task_id}"
            typer.echo(f"(waiting for try {wanted} of {where}: {state})", err=True)
            said = True
        try:
            time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
    if latest == 0:
        fail(f"{dag_id}/{run_id}/{task_id} has not started a try yet (--follow waits for it)")
    chosen = try_number or latest
    if chosen > latest:
        fail(f"{dag_id}/{run_id}/{task_id} has had {latest} tries: there is no try {chosen}")
    path = log_path(settings.logs_folder, dag_id, run_id, task_id, map_index, chosen)
    return LogTarget(path, ti_id, chosen, key)


def try_host(url: str, target: LogTarget) -> tuple[bool, str | None]:
    """Whether the target try is still queued or running, and the host running it."""
    with session_scope(url) as session:
        ti = task_instance_by_id(session, target.ti_id)
        if ti is None or ti.try_number != target.try_number:
            return False, None
        return ti.state in ACTIVE, ti.hostname


def print_new(path: Path, offset: int) -> int:
    """Print what was appended to ``path`` since ``offset``; returns the new offset."""
    if not path.is_file():
        return offset
    with path.open("rb") as log_file:
        log_file.seek(offset)
        # A MiB at a time: a log may hold TRADEWIND_TASK_LOG_MAX_BYTES, never held here whole.
        while data := log_file.read(_PRINT_BYTES):
            end = data.rfind(b"\n") + 1 if len(data) == _PRINT_BYTES else len(data)
            end = end or len(data)  # a piece longer than a MiB without a newline: as it is
            log_file.seek(offset + end)
            sys.stdout.write(data[:end].decode("utf-8", errors="replace"))
            offset += end
    sys.stdout.flush()
    return offset


def follow_log(url: str, target: LogTarget) -> None:
    """Print the log, then what is appended to it, until the try ends (or Ctrl-C)."""
    offset, noted = 0, False
    try:
        live, host = try_host(url, target)
        while live:
            offset = print_new(target.path, offset)
            if not offset and not noted and host and host != socket.gethostname():
                typer.echo(f"(the try runs on {host}: its log is there until it ends)", err=True)
                noted = True
            time.sleep(POLL_SECONDS)
            live, host = try_host(url, target)
        if offset:
            # The supervisor writes its last line just after recording the end: wait for it.
            time.sleep(POLL_SECONDS)
        if not target.path.is_file():
            fail(f"no log for {target.describe()} at {target.path}")
        print_new(target.path, offset)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
