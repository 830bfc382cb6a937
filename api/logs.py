"""Reading one try's log file for the API, a bounded chunk at a time.

The log is the file its supervisor wrote on this host (``tradewind.settings.log_path``); a try
that ran on another host has its log there (or at ``TRADEWIND_REMOTE_LOGS_URL``) and this says
so. ``continuation_token`` is the byte offset to read from next.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tradewind.settings import log_path

#: The most bytes of a log one response carries; the rest comes with the continuation token.
MAX_LOG_CHUNK_BYTES = 1024 * 1024


class BadLogToken(ValueError):
    """A continuation token that is not an offset into the log."""


@dataclass(frozen=True)
class LogChunk:
    lines: list[str]
    next_offset: int | None  # None: the end of the file was reached


def try_log(logs_folder: Path, key: tuple[str, str, str, int], try_number: int) -> Path:
    dag_id, run_id, task_id, map_index = key
    return log_path(logs_folder, dag_id, run_id, task_id, map_index, try_number)


def read_chunk(path: Path, token: str | None) -> LogChunk:
    """Up to ``MAX_LOG_CHUNK_BYTES`` of whole lines from ``token``'s offset (0 without one)."""
    offset = _offset(token)
    with path.open("rb") as log_file:
        log_file.seek(offset)
        data = log_file.read(MAX_LOG_CHUNK_BYTES + 1)
    if len(data) <= MAX_LOG_CHUNK_BYTES:
        return LogChunk(data.decode("utf-8", errors="replace").splitlines(), None)
    cut = data.rfind(b"\n", 0, MAX_LOG_CHUNK_BYTES) + 1 or MAX_LOG_CHUNK_BYTES
    lines = data[:cut].decode("utf-8", errors="replace").splitlines()
    return LogChunk(lines, offset + cut)


def _offset(token: str | None) -> int:
    if not token:
        return 0
    # An offset into one try's log: ASCII digits, under 1 TiB (2**63 failed in seek, and past
    # ext4's largest file a read fails: no log this server wrote is that long).
    if len(token) > 13 or not (token.isascii() and token.isdigit()) or int(token) > 2**40:
        raise BadLogToken(f"continuation token {token[:40]!r} is not one this server gave")
    return int(token)
