"""Reading one try's log file for the API and the task page, a bounded window at a time.

The log is the file its supervisor wrote on this host (``tradewind.settings.log_path``); a try
that ran on another host has its log there (or at ``TRADEWIND_REMOTE_LOGS_URL``) and this says
so. A log may be as large as ``TRADEWIND_TASK_LOG_MAX_BYTES`` (100 MiB by default), so nothing
here reads a whole one: the API reads forward from its ``continuation_token`` (the byte offset
to read from next, as Airflow's readers expect: the log in order, chunk by chunk), and the task
page opens on the log's tail, pages back with ``before`` and follows with ``offset``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tradewind.settings import log_path

#: The most bytes of a log one API response carries; the rest comes with the continuation token.
MAX_LOG_CHUNK_BYTES = 1024 * 1024
#: And the most lines: each is an item of its own in the JSON (time, level, logger, source).
MAX_LOG_CHUNK_LINES = 5000


class BadLogToken(ValueError):
    """A continuation token that is not an offset into the log."""


@dataclass(frozen=True)
class LogChunk:
    lines: list[str]
    next_offset: int | None  # None: the end of the file was reached


@dataclass(frozen=True)
class LogWindow:
    """Whole lines of a log: the bytes ``start`` to ``end``, decoded; ``size``: the file's."""

    text: str
    start: int
    end: int
    size: int


def try_log(logs_folder: Path, key: tuple[str, str, str, int], try_number: int) -> Path:
    dag_id, run_id, task_id, map_index = key
    return log_path(logs_folder, dag_id, run_id, task_id, map_index, try_number)


def read_chunk(path: Path, token: str | None) -> LogChunk:
    """Up to ``MAX_LOG_CHUNK_BYTES`` and ``MAX_LOG_CHUNK_LINES`` of whole lines from ``token``'s
    offset (0 without one)."""
    offset = _offset(token, path.stat().st_size)
    data, size = _after(path, offset, MAX_LOG_CHUNK_BYTES)
    end = -1
    for _ in range(MAX_LOG_CHUNK_LINES):
        end = data.find(b"\n", end + 1)
        if end < 0:
            break
    else:
        data = data[: end + 1]
    next_offset = offset + len(data)
    return LogChunk(_text(data).splitlines(), next_offset if next_offset < size else None)


def read_after(path: Path, offset: int, limit_bytes: int) -> LogWindow:
    """The whole lines after byte ``offset``, at most ``limit_bytes`` of them.

    The last line is cut only when a single line is longer than the limit (none the supervisor
    writes is, with the default limits).
    """
    data, size = _after(path, offset, limit_bytes)
    return LogWindow(_text(data), offset, offset + len(data), size)


def _after(path: Path, offset: int, limit_bytes: int) -> tuple[bytes, int]:
    """The bytes of whole lines after ``offset`` (at most ``limit_bytes``), and the file's size."""
    with path.open("rb") as log_file:
        size = log_file.seek(0, 2)
        log_file.seek(min(offset, size))
        data = log_file.read(limit_bytes)
    end_of_lines = data.rfind(b"\n") + 1
    if len(data) == limit_bytes and end_of_lines:
        data = data[:end_of_lines]
    return data, size


def read_before(path: Path, before: int, limit_bytes: int) -> LogWindow:
    """The whole lines that end at byte ``before``, at most ``limit_bytes`` of them."""
    with path.open("rb") as log_file:
        size = log_file.seek(0, 2)
        end = min(before, size)
        start = max(0, end - limit_bytes)
        log_file.seek(start)
        data = log_file.read(end - start)
    if start > 0:
        # Begin at a line's start: the line cut in two is read whole by the next page back.
        first = data.find(b"\n") + 1
        if first:
            data, start = data[first:], start + first
    return LogWindow(_text(data), start, end, size)


def read_tail(path: Path, limit_bytes: int) -> LogWindow:
    """The log's last whole lines, at most ``limit_bytes`` of them."""
    return read_before(path, path.stat().st_size, limit_bytes)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _offset(token: str | None, size: int) -> int:
    if not token:
        return 0
    # ASCII digits only: "²" is a digit to str.isdigit() and not to int().
    digits = token.isascii() and token.isdigit() and len(token) <= 20
    if not digits or int(token) > size:
        raise BadLogToken(f"continuation token {token[:40]!r} is not one this server gave")
    return int(token)
