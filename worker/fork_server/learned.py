"""Modules a try imported on first use, learned by the fork server so later spares inherit them.

The fork server preloads each DAG file's top-level imports, but a provider's operator imports its
hook (and the hook its driver: ``psycopg2`` for ``PostgresHook``) only when ``execute`` runs.
Each task process forked afresh paid that import again: ~14 ms of CPU per try of a
``SQLExecuteQueryOperator``, as much as the rest of the try (docs/benchmarks.md).

So every task process, at the end of each try, tells its fork server which ``airflow.*`` and
``tradewind.*`` modules it has that the server had not when it forked it, in one write to a pipe
both share (a write of at most ``PIPE_BUF`` bytes is never interleaved with another's). The
server imports them before it forks its next spare; what they import (``psycopg2``...) comes with
them. Only those two namespaces: Tradewind's own modules and the installed providers' are
libraries, safe to import in the server; a module of the DAG folder or any other import a task
makes is its own business, left to the task.

The report is written before the task process closes its channels to the supervisor, so the
supervisor has not recorded the try yet: the spare forked after the supervisor's next
``SpareTaken`` already has what the try learned (the spare forked before it does not).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import sys

#: The namespaces whose modules a try reports.
PREFIXES = ("airflow.", "tradewind.")
#: One report per write, so that reports from several task processes never interleave.
REPORT_BYTES = select.PIPE_BUF


class LearnedImports:
    """The fork server's side: the pipe its task processes report on, and what they reported."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self._partial = b""
        self.failed: set[str] = set()  # reported, but would not import here: never tried again

    def before_fork(self) -> None:
        """Import what was reported, and note what the next child starts with."""
        self.import_reported()
        if len(sys.modules) != _Child.count:  # else the same modules as at the last fork
            _Child.known = frozenset(name for name in sys.modules if name.startswith(PREFIXES))
            _Child.count = len(sys.modules)
        _Child.write_fd = self.write_fd

    def in_child(self) -> None:
        """The child keeps the write end only (closed on exec: a task's subprocess has none)."""
        os.close(self.read_fd)

    def import_reported(self) -> list[str]:
        """Import the modules reported since the last call; the names newly imported."""
        imported = []
        for name in self._read_names():
            if name in sys.modules or name in self.failed:
                continue
            try:
                importlib.import_module(name)
            except (
                Exception,
                SystemExit,
            ):  # it imported in the task: not here (the try will say why)
                self.failed.add(name)
                continue
            imported.append(name)
        return imported

    def _read_names(self) -> list[str]:
        data = self._partial
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.read_fd, 65536):
                data += chunk
        *reports, self._partial = data.split(b"\n")
        return [name for report in reports for name in report.decode().split()]


class _Child:
    """What a task process inherits: the server's modules at its fork, the pipe's write end."""

    known: frozenset[str] = frozenset()
    count = 0  # len(sys.modules) when ``known`` was taken
    write_fd: int | None = None


def report_new_imports() -> None:
    """In a task process after a try: tell the server the modules it lacks (nothing to tell:
    no write). Never fails the try: a full pipe or a closed one loses only a speed-up."""
    if _Child.write_fd is None or len(sys.modules) == _Child.count:
        return  # not forked by a server, or nothing imported (modules are seldom dropped)
    new = [n for n in list(sys.modules) if n.startswith(PREFIXES) and n not in _Child.known]
    if not new:
        return
    report, told = b"", []
    for name in new:
        encoded = name.encode() + b" "
        if len(report) + len(encoded) >= REPORT_BYTES:
            break  # the rest waits for this process's next try, if it has one
        report += encoded
        told.append(name)
    _Child.known = _Child.known.union(told)  # a warm process reports each once
    if len(told) == len(new):
        _Child.count = len(sys.modules)
    with contextlib.suppress(OSError):
        os.write(_Child.write_fd, report.rstrip() + b"\n")
