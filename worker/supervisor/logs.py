"""Each try's log: the task's stdout and stderr plus the supervisor's own lines, secrets masked.

Written under ``TRADEWIND_HOME/logs/<dag>/<run>/<task>/<map_index>/<try>.log`` on the worker.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TextIO

# Where a try's log lives is shared with its readers (the CLI, the API server): defined there.
from tradewind.settings import log_path

__all__ = ["MASK", "TryLog", "log_path"]

MASK = "***"


class TryLog:
    """Appends timestamped, masked lines to one try's log file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: TextIO = path.open("a", encoding="utf-8")
        self._secrets: set[str] = set()
        self._partial: dict[str, bytes] = {}

    def add_secret(self, secret: str) -> None:
        # Very short values would mask half the log and protect nothing.
        if len(secret) >= 3:
            self._secrets.add(secret)

    def mask(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, MASK)
        return text

    def line(self, source: str, text: str) -> None:
        self._write(source, [text])

    def _write(self, source: str, texts: list[str]) -> None:
        """Lines of one source, one timestamp and one flush for all (a read holds many)."""
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        self._file.write("".join(f"[{stamp}] {source}: {self.mask(text)}\n" for text in texts))
        self._file.flush()

    def feed(self, source: str, data: bytes) -> None:
        """Bytes read from a pipe: complete lines are written, the rest waits for more.

        Split as bytes and decoded per line: a character that one read cut in two is not garbled.
        """
        *lines, rest = (self._partial.pop(source, b"") + data).split(b"\n")
        if lines:
            self._write(source, [line.decode("utf-8", errors="replace") for line in lines])
        if rest:
            self._partial[source] = rest

    def end(self, source: str) -> None:
        """The pipe of ``source`` closed: its unfinished last line is written now, in order."""
        rest = self._partial.pop(source, b"")
        if rest:
            self.line(source, rest.decode("utf-8", errors="replace"))

    def close(self) -> None:
        for source in list(self._partial):
            self.end(source)
        self._file.close()
