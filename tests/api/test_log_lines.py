"""A try's log lines as Airflow 3's structured items: time, level, logger, source, message."""

from __future__ import annotations

import datetime as dt

from api.log_lines import parse

LOG = """\
[2026-12-04T19:01:20.979+00:00] supervisor: running d/r/t try 2
[2026-12-04T19:01:21.000+00:00] stdout: hello
[2026-12-04T19:01:21.010+00:00] stderr: INFO tradewind.iterable: 100 items: 0 finished
[2026-12-04T19:01:21.020+00:00] stderr: ERROR tradewind.iterable: item 7 failed
[2026-12-04T19:01:21.020+00:00] stderr: Traceback (most recent call last):
[2026-12-04T19:01:21.020+00:00] stderr:   File "x.py", line 3, in f
[2026-12-04T19:01:21.020+00:00] stderr: ValueError: no
[2026-12-04T19:01:21.030+00:00] stderr: DeprecationWarning: old
[2026-12-04T19:01:21.040+00:00] stderr: Traceback (most recent call last):
[2026-12-04T19:01:21.040+00:00] stderr: KeyError: 'k'
[2026-12-04T19:01:21.046+00:00] supervisor: try 2 ended up_for_retry: KeyError: 'k'
[2026-12-04T19:01:21.050+00:00] supervisor: timed out: sending SIGTERM to the task's process group
not a line of the supervisor's
"""


def test_levels_are_read_from_each_line_and_a_traceback_is_one_error_block() -> None:
    lines = list(parse(LOG.splitlines()))
    assert [(line.level, line.logger) for line in lines] == [
        ("info", "tradewind.supervisor"),
        ("info", "task.stdout"),
        ("info", "tradewind.iterable"),
        ("error", "tradewind.iterable"),
        ("error", "tradewind.iterable"),  # the record's traceback, the same moment
        ("error", "tradewind.iterable"),
        ("error", "tradewind.iterable"),
        ("warning", "task.stderr"),
        ("error", "task.stderr"),
        ("error", "task.stderr"),
        ("error", "tradewind.supervisor"),
        ("warning", "tradewind.supervisor"),
        ("info", ""),
    ]
    assert lines[2].event == "100 items: 0 finished"
    assert lines[0].timestamp == dt.datetime(2026, 12, 4, 19, 1, 20, 979000, tzinfo=dt.UTC)
    assert lines[-1].timestamp is None and lines[-1].event == "not a line of the supervisor's"
