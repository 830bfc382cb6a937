"""Importing DAG files in child processes: no DAG file stops the process that reads the folder.

A DAG file is code. One that calls ``os._exit``, crashes the interpreter, never finishes
importing or eats the machine's memory would take down whatever imported it: the scheduler,
the CLI, a worker with every try it runs. So the scheduler, the CLI and the worker import a
file in a child process first (``parse_files``), with a deadline
(``TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT``) and an address-space limit
(``TRADEWIND_DAG_FILE_PROCESSOR_MEMORY_MB``); what dies in the child is the file's import
error, one line naming the cause, and the next file goes on in a fresh child.

A child sends back what the store keeps of each DAG (its structure and version hash), not the
DAG object: the scheduler needs no DAG code in its own process. Children come from a
``multiprocessing`` fork server, so a new one starts in milliseconds, and several import files
at once (``TRADEWIND_DAG_FILE_PROCESSOR_PROCESSES``); each imports files one after another
until its pass ends or it dies.

Lives in ``tradewind/`` beside the loader it runs, because the scheduler, the worker and the
CLI all use it and none of them may import the others (docs/code-map.md).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import resource
import signal
import subprocess
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from tradewind.loader import dag_files, load_parsed_dags, one_line_error
from tradewind.settings import Settings, get_settings, reload_settings
from tradewind.spellings import noting_spellings, spelling_line

#: How long a child that was told to stop may take before it is killed.
_STOP_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class ProcessorLimits:
    """What one child may take: seconds per file, memory (0: no limit), how many at once."""

    timeout_seconds: float
    memory_mb: int
    processes: int

    @classmethod
    def of(cls, settings: Settings) -> ProcessorLimits:
        return cls(
            settings.dag_file_processor_timeout,
            settings.dag_file_processor_memory_mb,
            settings.dag_file_processor_processes,
        )


@dataclass(frozen=True)
class StoredDag:
    """One DAG as a child parsed it: what the store keeps of it, no code."""

    dag_id: str
    fileloc: str
    structure: dict[str, Any]
    version_hash: str
    paused_upon_creation: bool | None


@dataclass(frozen=True)
class FileParse:
    """One file's import: its DAGs, or its error (one line, then the traceback)."""

    path: str
    dags: tuple[StoredDag, ...] = ()
    error: tuple[str, str] | None = None
    #: Airflow 2 spellings the file used, each with Airflow 3's.
    spellings: tuple[str, ...] = ()


@dataclass
class DagFolder:
    """The DAGs of a folder, each parsed in a child, by id; the import errors, by file."""

    folder: Path
    dags: dict[str, StoredDag] = field(default_factory=dict)
    import_errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    spellings: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, folder: Path, limits: ProcessorLimits | None = None) -> DagFolder:
        parsed = cls(folder)
        paths = sorted(dag_files(folder))
        for result in parse_files(paths, limits or ProcessorLimits.of(get_settings())):
            parsed.add(result)
        return parsed

    def add(self, result: FileParse) -> None:
        """Take one file's parse; a DAG id another file defined already refuses the file."""
        if result.spellings:
            self.spellings[result.path] = list(result.spellings)
        clash = [dag.dag_id for dag in result.dags if dag.dag_id in self.dags]
        if clash:
            other = self.dags[clash[0]].fileloc
            line = f"ValueError: DAG id {clash[0]!r} is already defined in {other}"
            self.import_errors[result.path] = (line, "")
        elif result.error is not None:
            self.import_errors[result.path] = result.error
        for dag in () if clash else result.dags:
            self.dags[dag.dag_id] = dag

    def warning_line(self, path: str) -> str | None:
        """The one warning line of the file at ``path``, if it used Airflow 2 spellings."""
        notes = self.spellings.get(path)
        return spelling_line(notes) if notes else None


def parse_files(paths: Iterable[Path], limits: ProcessorLimits) -> list[FileParse]:
    """Import each file in a child process; their parses, in the order of ``paths``."""
    todo = deque(str(path) for path in paths)
    order = list(todo)
    done: dict[str, FileParse] = {}
    children: list[_Child] = []
    try:
        while todo or any(child.path for child in children):
            _hand_out(todo, children, limits)
            for result in _collect(children, limits):
                done[result.path] = result
    finally:
        for child in children:
            child.stop()
    return [done[path] for path in order]


def parse_file(path: Path, limits: ProcessorLimits) -> FileParse:
    """One file's import in a child process."""
    return parse_files([path], limits)[0]


def call_in_child(
    function: Callable[..., object], args: tuple[Any, ...], limits: ProcessorLimits
) -> str | None:
    """Run ``function(*args)`` (code of a DAG file) in a child process within the limits; the
    one line saying why it did not end, or None when it ended (its own errors are its own)."""
    context = _context()
    process = context.Process(
        target=_call_main,
        args=(function, args, dict(os.environ), limits.memory_mb),
        name="tradewind-dag-code",
        daemon=True,
    )
    process.start()
    process.join(limits.timeout_seconds)
    if process.exitcode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.kill()
        process.join(_STOP_GRACE_SECONDS)
        return (
            f"did not end within {limits.timeout_seconds:g} s "
            "(TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT): killed"
        )
    return None if process.exitcode == 0 else _death_line(process.exitcode, "the DAG code")


def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    # The fork server imports this module once; each child is a fork of it, ready at once.
    context.set_forkserver_preload([__name__])
    return context


def import_error_in_subprocess(path: Path, limits: ProcessorLimits) -> str | None:
    """The one-line import error of ``path``, imported in a fresh interpreter (None: it imports).

    For a process whose children must not inherit a ``multiprocessing`` fork server (the
    worker's fork server, whose every fork is a task process): a plain child, reaped here.
    """
    command = [sys.executable, "-m", __name__, str(path), str(limits.memory_mb)]
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        out, _ = child.communicate(timeout=limits.timeout_seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return _timeout_line(limits.timeout_seconds)
    said = out.decode(errors="replace").strip().splitlines()
    if child.returncode == 0:
        return said[-1] if said and said[-1] != _IMPORTS else None
    return _death_line(child.returncode)


_IMPORTS = "imports"


def main() -> None:
    """``python -m tradewind.dag_processor PATH MEMORY_MB``: print the file's one-line import
    error, or ``imports``, as the last line (what the file prints comes before)."""
    path, memory_mb = Path(sys.argv[1]), int(sys.argv[2])
    _enter_child(dict(os.environ), memory_mb, own_group=False)
    result = _import(path, memory_mb)
    print(result.error[0] if result.error else _IMPORTS, flush=True)
    os._exit(0)


def _timeout_line(timeout_seconds: float) -> str:
    return (
        f"the file did not finish importing within {timeout_seconds:g} s "
        "(TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT): its import was killed"
    )


def _hand_out(todo: deque[str], children: list[_Child], limits: ProcessorLimits) -> None:
    children[:] = [child for child in children if child.alive]
    busy = sum(child.path is not None for child in children)
    while len(children) < min(limits.processes, busy + len(todo)):
        children.append(_Child.start(limits))
    for child in children:
        if child.path is None and todo:
            child.send(todo.popleft(), limits.timeout_seconds)


def _collect(children: list[_Child], limits: ProcessorLimits) -> list[FileParse]:
    """Wait for the first answer or deadline; the files that ended meanwhile."""
    busy = [child for child in children if child.path is not None]
    nearest = min(child.deadline for child in busy)
    ready = set(wait([child.conn for child in busy], max(0.0, nearest - time.monotonic())))
    results: list[FileParse] = []
    for child in busy:
        if child.conn in ready:
            results.append(child.receive())
        elif time.monotonic() >= child.deadline:
            results.append(child.time_out(limits.timeout_seconds))
    return results


class _Child:
    """One child process importing the files it is sent, one at a time."""

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.path: str | None = None  # the file it imports now
        self.deadline = 0.0
        self.alive = True

    @classmethod
    def start(cls, limits: ProcessorLimits) -> _Child:
        context = _context()
        ours, theirs = context.Pipe()
        # The fork server's environment is the one it started with: the child takes ours.
        process = context.Process(
            target=_child_main,
            args=(theirs, dict(os.environ), limits.memory_mb),
            name="tradewind-dag-processor",
            daemon=True,
        )
        process.start()
        theirs.close()  # so that the child's death is an EOF on ours
        return cls(process, ours)

    def send(self, path: str, timeout_seconds: float) -> None:
        self.path, self.deadline = path, time.monotonic() + timeout_seconds
        with contextlib.suppress(OSError):  # it died already: the receive says how
            self.conn.send(path)

    def receive(self) -> FileParse:
        path, self.path = self.path or "", None
        try:
            result: FileParse = self.conn.recv()
        except (EOFError, OSError):
            self.alive = False
            self.process.join(_STOP_GRACE_SECONDS)
            return FileParse(path, error=(_death_line(self.process.exitcode), ""))
        return result

    def time_out(self, timeout_seconds: float) -> FileParse:
        path, self.path = self.path or "", None
        self.kill()
        return FileParse(path, error=(_timeout_line(timeout_seconds), ""))

    def kill(self) -> None:
        self.alive = False
        # Its own process group: whatever the file started goes with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.kill()
        self.process.join(_STOP_GRACE_SECONDS)
        self.conn.close()

    def stop(self) -> None:
        if self.alive and self.path is None:
            with contextlib.suppress(OSError):
                self.conn.send(None)
            self.process.join(_STOP_GRACE_SECONDS)
        if self.process.is_alive() or self.path is not None:
            self.kill()
        self.conn.close()


def _death_line(code: int | None, what: str = "the file's import") -> str:
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return f"{what} crashed the process it ran in (signal {-code}, {name})"
    return f"{what} ended the process it ran in (exit code {code})"


def _enter_child(environ: dict[str, str], memory_mb: int, own_group: bool = True) -> None:
    """Set up a child: its own process group, the parent's environment, the memory limit."""
    if own_group:
        os.setpgid(0, 0)
    os.environ.clear()
    os.environ.update(environ)
    reload_settings()
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _call_main(
    function: Callable[..., object], args: tuple[Any, ...], environ: dict[str, str], memory_mb: int
) -> None:
    _enter_child(environ, memory_mb)
    function(*args)
    os._exit(0)  # threads the code left running must not keep the child alive


def _child_main(conn: Connection, environ: dict[str, str], memory_mb: int) -> None:
    """Import each path received, send back its parse; exit on ``None`` (never returns)."""
    _enter_child(environ, memory_mb)
    while (path := conn.recv()) is not None:
        result = _import(Path(path), memory_mb)
        try:
            conn.send(result)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            line = f"a DAG of the file cannot be sent to the scheduler: {one_line_error(error)}"
            conn.send(FileParse(result.path, error=(line, "")))
    # Threads a DAG file left running must not keep the child alive.
    os._exit(0)


def _import(path: Path, memory_mb: int) -> FileParse:
    notes: list[str] = []
    try:
        with noting_spellings() as notes:
            found = load_parsed_dags(path)
    except (Exception, SystemExit) as error:
        line = one_line_error(error)
        if isinstance(error, MemoryError):
            line = (
                f"MemoryError: the import used more than {memory_mb} MiB "
                "(TRADEWIND_DAG_FILE_PROCESSOR_MEMORY_MB)"
            )
        return FileParse(str(path), error=(line, traceback.format_exc()), spellings=tuple(notes))
    dags = tuple(
        StoredDag(
            parsed.dag.dag_id,
            parsed.dag.fileloc or str(path),
            parsed.structure,
            parsed.version_hash,
            parsed.dag.run_options.is_paused_upon_creation,
        )
        for parsed in found
    )
    return FileParse(str(path), dags=dags, spellings=tuple(notes))


if __name__ == "__main__":
    main()
