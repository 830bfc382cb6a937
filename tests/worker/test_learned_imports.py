"""The fork server's side of the imports its task processes report (worker/fork_server/learned.py):
reports read whole across reads, a name that does not import tried once."""

from __future__ import annotations

import os
import sys

import pytest

from worker.fork_server.learned import LearnedImports


def test_a_report_split_across_reads_is_imported_once_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "tradewind.providers.compat", raising=False)
    learned = LearnedImports()
    learned.before_fork()
    write_fd = os.dup(learned.write_fd)
    try:
        os.write(write_fd, b"tradewind.no_such_module tradewind.providers.com")
        assert learned.import_reported() == []  # half a report: nothing yet
        os.write(write_fd, b"pat\n")
        assert learned.import_reported() == ["tradewind.providers.compat"]
        os.write(write_fd, b"tradewind.no_such_module tradewind.providers.compat\n")
        assert learned.import_reported() == []  # one failed, the other is there
        assert learned.failed == {"tradewind.no_such_module"}
    finally:
        os.close(write_fd)
        os.close(learned.read_fd)
        os.close(learned.write_fd)
