"""A try's log lines as structured items: time, source, level, logger and message.

The supervisor writes each line as ``[<ISO time>] <source>: <text>`` (worker/supervisor/logs.py),
the source being ``supervisor``, ``stdout`` or ``stderr``; the task process's own logging writes
``<LEVEL> <logger>: <message>`` to its stderr (worker/process.py). So a level is read, never
guessed from words: a logging line has its own; the supervisor's lines are ``info``, but
``error`` for a try that ended failed or up for retry and ``warning`` for what it could not do
or had to kill; ``stdout`` is ``info``; other ``stderr`` lines are ``warning``, but a
traceback (and the lines of the same moment that follow it) is ``error``, as is a line
continuing a logging record of the same moment (a record's traceback).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

LEVELS = ("debug", "info", "warning", "error", "critical")
_LINE = re.compile(r"^\[(?P<ts>[0-9T:.+\-]+)\] (?P<source>[a-z_]+): (?P<text>.*)$", re.DOTALL)
_RECORD = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<logger>[\w.\-]+): (?P<m>.*)$"
)
_BAD_END = re.compile(r"^try \d+ ended (failed|up_for_retry)")
_TROUBLE = re.compile(r"^(could not |the try lost |still running after )|: sending SIG(TERM|KILL)")
_LOGGERS = {"supervisor": "tradewind.supervisor", "stdout": "task.stdout", "stderr": "task.stderr"}


@dataclass(frozen=True)
class LogLine:
    timestamp: dt.datetime | None
    source: str
    level: str
    logger: str
    event: str


def parse(lines: Iterable[str]) -> Iterator[LogLine]:
    """Each line as a ``LogLine``; a line not in the supervisor's form is kept whole as ``info``."""
    carried: tuple[str, str, str] | None = None  # (timestamp text, level, logger) of a block
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            yield LogLine(None, "", "info", "", line)
            continue
        stamp, source, text = match["ts"], match["source"], match["text"]
        when = _time(stamp)
        if source == "supervisor":
            level = (
                "error" if _BAD_END.match(text) else "warning" if _TROUBLE.search(text) else "info"
            )
            yield LogLine(when, source, level, _LOGGERS[source], text)
            continue
        if source != "stderr":
            yield LogLine(when, source, "info", _LOGGERS.get(source, source), text)
            continue
        record = _RECORD.match(text)
        if record is not None:
            level, logger = record["level"].lower(), record["logger"]
            carried = (stamp, level, logger)
            yield LogLine(when, source, level, logger, record["m"])
        elif text.startswith("Traceback (most recent call last):"):
            logger = carried[2] if carried and carried[0] == stamp else _LOGGERS[source]
            carried = (stamp, "error", logger)
            yield LogLine(when, source, "error", logger, text)
        elif carried is not None and carried[0] == stamp:
            yield LogLine(when, source, carried[1], carried[2], text)
        else:
            carried = None
            yield LogLine(when, source, "warning", _LOGGERS[source], text)


def _time(stamp: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None
