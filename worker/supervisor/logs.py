"""Each try's log: the task's stdout and stderr plus the supervisor's own lines, secrets masked.

Written under ``TRADEWIND_HOME/logs/<dag>/<run>/<task>/<map_index>/<try>.log`` on the worker.

A task's output is hostile input (DESIGN.md §7): it is read in time linear in its size, whatever
its shape. A line longer than ``TRADEWIND_TASK_LOG_LINE_MAX_BYTES`` is written in pieces (said
once per try), so the supervisor never holds more than one line's cap of it; past
``TRADEWIND_TASK_LOG_MAX_BYTES`` written, the task's further lines are dropped and counted, and
one line at the end says how many. The supervisor's own lines are always written: they are few,
and they say how the try ended.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# Where a try's log lives is shared with its readers (the CLI, the API server): defined there.
from tradewind.settings import Settings, get_settings, log_path

__all__ = ["MASK", "LineBuffer", "LogLimits", "Masker", "TryLog", "log_path"]

MASK = "***"
#: Very short values would mask half the log and protect nothing.
MIN_SECRET_CHARS = 3
_SUPERVISOR = "supervisor"
#: What a line adds to its text: ``[<ISO time with ms and offset>] <source>: `` and ``\n``.
_PREFIX_BYTES = len("[2026-01-01T00:00:00.000+00:00] : \n")


@dataclass(frozen=True)
class LogLimits:
    """How long one line of a task's output may be, and how much of it one try's log holds."""

    line_max_bytes: int
    max_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> LogLimits:
        return cls(settings.task_log_line_max_bytes, settings.task_log_max_bytes)


class LineBuffer:
    """One pipe's bytes cut into lines, in time and memory linear in what is fed.

    Each read is scanned once and kept as one chunk until its line is complete: a line is joined
    once, never re-copied per read (a line of 128 MiB without a newline, read 64 KiB at a time,
    once cost 2,048 growing copies). Past ``max_bytes`` the buffered part of a line comes out as
    a piece of it, so no more than about one cap is ever held.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._chunks: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes) -> list[tuple[bytes, bool]]:
        """The lines (or pieces of a long line) ``data`` completes, each with "does it go on".

        A piece that goes on is followed by the rest of its line; the last piece does not.
        """
        *complete, rest = data.split(b"\n")
        out: list[tuple[bytes, bool]] = []
        for part in complete:
            self._keep(part, out)
            out.append((self._take_all(), False))
        self._keep(rest, out)
        return out

    def end(self) -> list[tuple[bytes, bool]]:
        """The pipe closed: its unfinished last line, if any."""
        return [(self._take_all(), False)] if self._size else []

    def _keep(self, part: bytes, out: list[tuple[bytes, bool]]) -> None:
        if part:
            self._chunks.append(part)
            self._size += len(part)
        if self._size <= self.max_bytes:
            return
        buffered = self._take_all()
        start = 0
        while len(buffered) - start > self.max_bytes:
            cut = _char_boundary(buffered, start + self.max_bytes)
            out.append((buffered[start:cut], True))
            start = cut
        self._chunks, self._size = [buffered[start:]], len(buffered) - start

    def _take_all(self) -> bytes:
        joined = b"".join(self._chunks)
        self._chunks, self._size = [], 0
        return joined


def _char_boundary(data: bytes, cut: int) -> int:
    """``cut``, moved back (at most 3 bytes) so that it does not fall inside a UTF-8 character."""
    for back in range(4):
        if cut - back <= 0 or data[cut - back] & 0xC0 != 0x80:
            return cut - back
    return cut


class Masker:
    """Replaces every registered secret with ``***``.

    A secret of several lines (a PEM key) is masked as a whole and line by line: the log is
    written a line at a time, so each of its lines is a secret of its own.
    """

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._stale = False

    def add(self, secret: str) -> None:
        parts = [secret, *(line.strip() for line in secret.splitlines())]
        new = {part for part in parts if len(part) >= MIN_SECRET_CHARS} - self._secrets
        if new:
            self._secrets |= new
            self._stale = True  # compiled at the next line: many secrets at once cost one

    def mask(self, text: str) -> str:
        if self._stale:
            # Longest first: a secret that holds another is masked whole, not around it.
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(map(re.escape, ordered)))
            self._stale = False
        return text if self._pattern is None else self._pattern.sub(MASK, text)


class TryLog:
    """Appends timestamped, masked lines to one try's log file, within its limits."""

    def __init__(self, path: Path, limits: LogLimits | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.limits = limits or LogLimits.of(get_settings())
        self._file: BinaryIO = path.open("ab")
        self._written = self._file.tell()
        self._masker = Masker()
        self._buffers: dict[str, LineBuffer] = {}
        self._said_split = False
        self._dropping = False
        self._dropped_lines = 0
        self._dropped_bytes = 0

    def add_secret(self, secret: str) -> None:
        self._masker.add(secret)

    def mask(self, text: str) -> str:
        return self._masker.mask(text)

    def line(self, source: str, text: str) -> None:
        """One line of the supervisor's own: always written, past the size cap too."""
        self._write(source, [text])

    def feed(self, source: str, data: bytes) -> None:
        """Bytes read from a pipe: complete lines are written, the rest waits for more.

        Split as bytes and decoded per line: a character that one read cut in two is not garbled.
        """
        buffer = self._buffers.get(source)
        if buffer is None:
            buffer = self._buffers[source] = LineBuffer(self.limits.line_max_bytes)
        self._output(source, buffer.feed(data))

    def end(self, source: str) -> None:
        """The pipe of ``source`` closed: its unfinished last line is written now, in order."""
        buffer = self._buffers.pop(source, None)
        if buffer is not None:
            self._output(source, buffer.end())

    def close(self) -> None:
        for source in list(self._buffers):
            self.end(source)
        if self._dropping:
            self.line(
                _SUPERVISOR,
                f"dropped {self._dropped_lines} line(s) ({self._dropped_bytes} bytes) of the "
                f"task's output past TRADEWIND_TASK_LOG_MAX_BYTES ({self.limits.max_bytes} bytes)",
            )
        self._file.close()

    def _output(self, source: str, pieces: Iterable[tuple[bytes, bool]]) -> None:
        """The task's lines: split ones announced once, those past the size cap counted."""
        texts: list[str] = []
        size = self._written
        for piece, goes_on in pieces:
            size += _PREFIX_BYTES + len(source) + len(piece)
            if self._dropping or size > self.limits.max_bytes:
                self._drop(source, texts, piece, goes_on)
                texts = []
                continue
            if goes_on and not self._said_split:
                self._write(source, texts)
                texts = []
                self._say_split(source)
            texts.append(piece.decode("utf-8", errors="replace"))
        self._write(source, texts)

    def _say_split(self, source: str) -> None:
        self._said_split = True
        self.line(
            _SUPERVISOR,
            f"a line of {source} is longer than TRADEWIND_TASK_LOG_LINE_MAX_BYTES "
            f"({self.limits.line_max_bytes} bytes): such lines are written in pieces of at most "
            "that size",
        )

    def _drop(self, source: str, pending: list[str], piece: bytes, goes_on: bool) -> None:
        if not self._dropping:
            self._dropping = True
            self._write(source, pending)
            self.line(
                _SUPERVISOR,
                f"the log reached TRADEWIND_TASK_LOG_MAX_BYTES ({self.limits.max_bytes} bytes): "
                "the task's further output is dropped",
            )
        self._dropped_lines += 0 if goes_on else 1  # a long line's pieces count as one line
        self._dropped_bytes += len(piece)

    def _write(self, source: str, texts: list[str]) -> None:
        """Lines of one source, one timestamp and one flush for all (a read holds many)."""
        if not texts:
            return
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        data = "".join(f"[{stamp}] {source}: {self.mask(text)}\n" for text in texts).encode()
        self._file.write(data)
        self._file.flush()
        self._written += len(data)
