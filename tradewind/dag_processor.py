"""Importing DAG files in child processes: no DAG file stops the process that reads the folder.

A DAG file is code. One that calls ``os._exit``, crashes the interpreter, never finishes
importing or eats the machine's memory would take down whatever imported it: the scheduler,
the CLI, a worker with every try it runs. So the scheduler, the CLI and the worker import a
file in a child process first (``parse_files``), with a deadline
(``TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT``) and an address-space limit
(``TRADEWIND_DAG_FILE_PROCESSOR_MEMORY_MB``); what dies in the child is the file's import
error, one line naming the cause, and the next file goes on in a fresh child.

A child sends back what the store keeps of each DAG (its structure and version hash), not the
DAG object: the scheduler needs no DAG code in its own process. A child is a fresh interpreter
(``python -m tradewind.dag_processor``: no fork of a threaded process, no copy of the parent's
state, the parent's environment as it is now); several import files at once
(``TRADEWIND_DAG_FILE_PROCESSOR_PROCESSES``), each file after file until its pass ends or it
dies, so a pass pays for a few interpreters' start, not one per file.

Lives in ``tradewind/`` beside the loader it runs, because the scheduler, the worker and the
CLI all use it and none of them may import the others (docs/code-map.md).
"""

from __future__ import annotations

import contextlib
import ctypes
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
from tradewind.settings import Settings, get_settings
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
    one line saying why it did not end, or None when it ended (its own errors are its own).
    ``function`` must be importable by name (a module's function)."""
    child = _Child.start("call", limits.memory_mb)
    try:
        child.requests.send((function, args))
        if not child.results.poll(limits.timeout_seconds):
            child.kill()
            return (
                f"did not end within {limits.timeout_seconds:g} s "
                "(TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT): killed"
            )
        code = child.process.wait()
    finally:
        child.stop()
    return None if code == 0 else _death_line(code, "the DAG code")


def _timeout_line(timeout_seconds: float) -> str:
    return (
        f"the file did not finish importing within {timeout_seconds:g} s "
        "(TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT): its import was killed"
    )


def _hand_out(todo: deque[str], children: list[_Child], limits: ProcessorLimits) -> None:
    children[:] = [child for child in children if child.alive]
    busy = sum(child.path is not None for child in children)
    while len(children) < min(limits.processes, busy + len(todo)):
        children.append(_Child.start("serve", limits.memory_mb))
    for child in children:
        if child.path is None and todo:
            child.send(todo.popleft(), limits.timeout_seconds)


def _collect(children: list[_Child], limits: ProcessorLimits) -> list[FileParse]:
    """Wait for the first answer or deadline; the files that ended meanwhile."""
    busy = [child for child in children if child.path is not None]
    nearest = min(child.deadline for child in busy)
    ready = set(wait([child.results for child in busy], max(0.0, nearest - time.monotonic())))
    results: list[FileParse] = []
    for child in busy:
        if child.results in ready:
            results.append(child.receive())
        elif time.monotonic() >= child.deadline:
            results.append(child.time_out(limits.timeout_seconds))
    return results


class _Child:
    """One child interpreter importing the files it is sent, one at a time.

    Requests and results travel on two pipes of their own (pickled, ``multiprocessing``'s
    framing): the child's stdout is the parent's stderr, so what a DAG file prints never mixes
    with an answer, nor with a command's output.
    """

    def __init__(self, process: subprocess.Popen[bytes], requests: Connection, results: Connection):
        self.process = process
        self.requests = requests
        self.results = results
        self.path: str | None = None  # the file it imports now
        self.deadline = 0.0
        self.alive = True

    @classmethod
    def start(cls, mode: str, memory_mb: int) -> _Child:
        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        command = [sys.executable, "-P", "-m", __name__, mode, str(request_read), str(result_write)]
        try:
            process = subprocess.Popen(
                [*command, str(memory_mb), str(os.getpid())],
                pass_fds=(request_read, result_write),
                stdin=subprocess.DEVNULL,
                stdout=2,
                # Its own process group: whatever the file starts is killed with it.
                start_new_session=True,
            )
        finally:
            os.close(request_read)  # the child's ends: its death is an EOF on ours
            os.close(result_write)
        return cls(
            process,
            Connection(request_write, readable=False),
            Connection(result_read, writable=False),
        )

    def send(self, path: str, timeout_seconds: float) -> None:
        self.path, self.deadline = path, time.monotonic() + timeout_seconds
        with contextlib.suppress(OSError):  # it died already: the receive says how
            self.requests.send(path)

    def receive(self) -> FileParse:
        path, self.path = self.path or "", None
        try:
            result: FileParse = self.results.recv()
        except (EOFError, OSError):
            try:
                code = self.process.wait(_STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:  # it closed its end and lives on: ended here
                self.kill()
                code = self.process.returncode
            self.alive = False
            return FileParse(path, error=(_death_line(code), ""))
        return result

    def time_out(self, timeout_seconds: float) -> FileParse:
        path, self.path = self.path or "", None
        self.kill()
        return FileParse(path, error=(_timeout_line(timeout_seconds), ""))

    def kill(self) -> None:
        self.alive = False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):  # stuck in the kernel: left to init
            self.process.wait(_STOP_GRACE_SECONDS)

    def stop(self) -> None:
        if self.alive and self.path is None:
            with contextlib.suppress(OSError):
                self.requests.send(None)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(_STOP_GRACE_SECONDS)
        if self.process.poll() is None:
            self.kill()
        self.requests.close()
        self.results.close()


def _death_line(code: int | None, what: str = "the file's import") -> str:
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return f"{what} crashed the process it ran in (signal {-code}, {name})"
    return f"{what} ended the process it ran in (exit code {code})"


def main() -> None:
    """``python -m tradewind.dag_processor serve|call REQUESTS_FD RESULTS_FD MEMORY_MB PARENT``.

    ``serve`` imports each path received and sends back its ``FileParse`` until it receives
    None; ``call`` runs the one ``(function, args)`` it receives.
    """
    mode, request_fd, result_fd, memory_mb, parent = sys.argv[1], *map(int, sys.argv[2:6])
    _die_with(parent)
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    requests = Connection(request_fd, writable=False)
    results = Connection(result_fd, readable=False)
    if mode == "call":
        function, args = requests.recv()
        function(*args)
    else:
        while (path := requests.recv()) is not None:
            _send(results, _import(Path(path), memory_mb))
    sys.stdout.flush()
    # Threads a DAG file left running must not keep the child alive.
    os._exit(0)


def _die_with(parent: int) -> None:
    """SIGKILL when the process that started this one dies: a file hanging here (``while True``)
    must not outlive a scheduler or a worker killed meanwhile."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(0)


_PR_SET_PDEATHSIG = 1


def _send(results: Connection, result: FileParse) -> None:
    try:
        results.send(result)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        line = f"a DAG of the file cannot be sent to the scheduler: {one_line_error(error)}"
        results.send(FileParse(result.path, error=(line, "")))


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
    # Run under this module's own name, so that what it pickles is ``tradewind.dag_processor``'s.
    from tradewind.dag_processor import main as _main

    _main()
