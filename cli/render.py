"""How the CLI shows things: consoles, state colours, tables of DAGs and task instances, and the
live progress of a run.

Commands read the store and hand rows here; nothing in this module queries anything, so every
command (``runs show``, ``dags test``, ``dags trigger --wait``, ``standalone``) shows a run the
same way. User text (ids, errors) is always passed as ``Text``, never as markup: an error
message containing ``[brackets]`` must print as written.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console, Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from state.core import (
    FINISHED,
    WAITING_FOR_TIME,
    DagImportError,
    DagModel,
    DagStructure,
    TaskInstance,
    utcnow,
)
from state.records import TIKey
from state.views import ItemsProgress

#: Width of piped output: wrapping paths and errors at rich's default 80 would break ``grep``.
PIPED_WIDTH = 200

STATE_STYLES = {
    "success": "green",
    "failed": "red",
    "upstream_failed": "dark_orange",
    "up_for_retry": "yellow",
    "up_for_reschedule": "yellow",
    "deferred": "medium_purple",
    "awaiting_input": "dodger_blue1",
    "running": "cyan",
    "queued": "blue",
    "scheduled": "magenta",
    "skipped": "bright_black",
    "removed": "bright_black",
    "none": "dim",
}


def make_console(stderr: bool = False) -> Console:
    """A console for one command's output (created per command: tests swap ``sys.stdout``)."""
    console = Console(stderr=stderr, highlight=False, markup=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPED_WIDTH
    return console


def state_text(state: str | None) -> Text:
    name = str(state or "none")
    return Text(name, style=STATE_STYLES.get(name, ""))


def seconds_text(seconds: float | None) -> str:
    """``0.42s``, ``3m 05s``, ``2h 01m``; empty for no value."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.2f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    return f"{minutes // 60}h {minutes % 60:02d}m"


# --- task instances (``runs show``, ``dags test``) -----------------------------------------


@dataclass(frozen=True)
class RowContext:
    """What a column's value may need besides the task instance."""

    now: dt.datetime  # for the durations of running tries
    items: Mapping[TIKey, ItemsProgress]  # the iterable task instances' items, read beforehand


@dataclass(frozen=True)
class Column:
    """One column of the task-instance view: its JSON key, table header and value.

    ``value`` gives the JSON value of a row; ``text`` turns it into the table cell. A column
    with ``json_keys`` has a mapping for value, spread over those keys in JSON (its ``key`` is
    then only its name); its ``text`` gets that mapping back to make its one cell.
    """

    key: str
    header: str
    value: Callable[[TaskInstance, RowContext], Any]
    text: Callable[[Any], str | Text] = lambda value: "" if value is None else str(value)
    justify: Literal["left", "right"] = "left"
    json_keys: tuple[str, ...] = ()


def _duration(ti: TaskInstance, context: RowContext) -> float | None:
    """The latest try's duration; a running try counts up to now."""
    if ti.start_date is None:
        return None
    end = ti.end_date or (context.now if ti.state == "running" else None)
    return None if end is None else round((end - ti.start_date).total_seconds(), 3)


#: A mapped task instance's index and its name (its ``map_index_template`` rendered).
MAP_KEYS = ("map_index", "rendered_map_index")


def _map_keys(ti: TaskInstance, _: RowContext) -> dict[str, Any]:
    return {"map_index": ti.map_index, "rendered_map_index": ti.rendered_map_index}


def _map_text(value: Mapping[str, Any]) -> str:
    if value["map_index"] < 0:
        return ""
    name = value["rendered_map_index"]
    return f"{value['map_index']} {name}" if name else str(value["map_index"])


def _error_line(ti: TaskInstance, _context: RowContext) -> str | None:
    lines = (ti.error or "").strip().splitlines()
    return lines[0] if lines else None


ITEM_KEYS = ("items_done", "items_failed", "items_skipped", "items_total")


def _items(ti: TaskInstance, context: RowContext) -> dict[str, int | None]:
    """An iterable task instance's items by outcome, and their number; None for the others."""
    progress = context.items.get(TIKey(ti.dag_id, ti.run_id, ti.task_id, ti.map_index))
    if progress is None:
        return dict.fromkeys(ITEM_KEYS)
    counts = (progress.done, progress.failed, progress.skipped, progress.total)
    return dict(zip(ITEM_KEYS, counts, strict=True))


def items_text(items: Mapping[str, int | None]) -> str:
    """``2997/3000 done, 3 failed, 0 skipped``; ``?`` for a total not counted yet."""
    if items["items_done"] is None:
        return ""
    total = "?" if items["items_total"] is None else items["items_total"]
    return (
        f"{items['items_done']}/{total} done, "
        f"{items['items_failed']} failed, {items['items_skipped']} skipped"
    )


def _next_try_at(ti: TaskInstance, context: RowContext) -> str | None:
    """When a retry or a sensor's next poke is due (ISO, UTC); None for the others."""
    if ti.state not in WAITING_FOR_TIME or ti.next_retry_at is None:
        return None
    return ti.next_retry_at.isoformat(timespec="seconds")


def next_try_text(value: str | None) -> str:
    return "" if value is None else value.replace("T", " ").replace("+00:00", " UTC")


#: The columns of ``runs show`` (table and ``--json``) and of ``dags test``'s summary, in order.
#: To show more, add a ``Column`` here: both outputs follow. Keep ``error`` last: it is the one
#: cell that may be long.
TASK_INSTANCE_COLUMNS: list[Column] = [
    Column("task_id", "task", lambda ti, _: ti.task_id),
    Column("map", "map", _map_keys, text=_map_text, json_keys=MAP_KEYS),
    Column("state", "state", lambda ti, _: str(ti.state), text=state_text),
    Column("try_number", "try", lambda ti, _: ti.try_number, justify="right"),
    Column("duration_seconds", "duration", _duration, text=seconds_text, justify="right"),
    Column("items", "items", _items, text=items_text, json_keys=ITEM_KEYS),
    Column("next_try_at", "next", _next_try_at, text=next_try_text),
    Column("error", "error", _error_line),
]


def task_instance_records(
    tis: Iterable[TaskInstance],
    columns: Sequence[Column] = TASK_INSTANCE_COLUMNS,
    *,
    items: Mapping[TIKey, ItemsProgress] | None = None,
) -> list[dict[str, Any]]:
    """One JSON-ready mapping per task instance, keyed by the columns' keys.

    ``items`` is the progress of the iterable task instances among ``tis``
    (``state.views.progress.items_of_run``).
    """
    context = RowContext(utcnow(), items or {})
    records = []
    for ti in tis:
        record: dict[str, Any] = {}
        for column in columns:
            value = column.value(ti, context)
            if column.json_keys:
                record.update(value)
            else:
                record[column.key] = value
        records.append(record)
    return records


def _record_value(record: Mapping[str, Any], column: Column) -> Any:
    if column.json_keys:
        return {key: record[key] for key in column.json_keys}
    return record[column.key]


def task_instances_table(
    records: Sequence[dict[str, Any]], columns: Sequence[Column] = TASK_INSTANCE_COLUMNS
) -> Table:
    table = Table()
    for column in columns:
        table.add_column(column.header, justify=column.justify, overflow="fold")
    for record in records:
        table.add_row(*(_cell(column.text(_record_value(record, column))) for column in columns))
    return table


def print_task_instances(console: Console, title: str, records: Sequence[dict[str, Any]]) -> None:
    """A title line (not a table title: rich would wrap it to the table's width), the table."""
    console.print(Text(title, style="bold"))
    console.print(task_instances_table(records))


def _cell(value: str | Text) -> Text:
    return value if isinstance(value, Text) else Text(value)


# --- DAGs (``dags list``) ------------------------------------------------------------------


def dag_record(model: DagModel, structure: DagStructure) -> dict[str, Any]:
    return {
        "dag_id": model.dag_id,
        "fileloc": model.fileloc,
        "tasks": len(structure.tasks),
        "is_paused": bool(model.is_paused),
        "schedule": structure.schedule_summary,
        "tags": list(structure.tags),
    }


def import_error_record(error: DagImportError) -> dict[str, Any]:
    return {"fileloc": error.fileloc, "error": error.error}


def dags_table(records: Sequence[dict[str, Any]]) -> Table:
    table = Table(title="DAGs", title_justify="left")
    for header in ("dag_id", "file", "tasks", "paused", "schedule"):
        table.add_column(header, justify="right" if header == "tasks" else "left")
    for dag in records:
        table.add_row(
            Text(dag["dag_id"]),
            Text(dag["fileloc"]),
            str(dag["tasks"]),
            "yes" if dag["is_paused"] else "no",
            Text(dag["schedule"] or "None"),
        )
    return table


def import_errors_table(records: Sequence[dict[str, Any]]) -> Table:
    table = Table(title="Import errors", title_justify="left", title_style="red")
    table.add_column("file")
    table.add_column("error", style="red", overflow="fold")
    for error in records:
        table.add_row(Text(error["fileloc"]), Text(error["error"]))
    return table


# --- the live progress of a run (``dags trigger --wait``, ``standalone --run``) ------------


class RunProgress:
    """What a watched run looks like now: a bar of finished/total task instances, a bar of
    finished/total items while the run has iterable task instances, then a count per state.

    Rendered afresh each time ``rich.live.Live`` refreshes; ``update`` feeds it the latest poll.
    """

    def __init__(self, dag_id: str, run_id: str) -> None:
        self.dag_id, self.run_id = dag_id, run_id
        self.label = f"{dag_id} {run_id}"
        self.run_state = "queued"
        self.states: Counter[str] = Counter()
        self.items: list[ItemsProgress] = []
        self.started = time.monotonic()

    def update(
        self,
        run_state: str,
        states: Iterable[str] | Mapping[str, int],
        items: Iterable[ItemsProgress] = (),
    ) -> None:
        """The latest poll: the run's state, its task instances' states (or how many are in
        each), and the item progress of its iterable task instances (none: no item bar).
        """
        self.run_state = run_state
        if isinstance(states, Mapping):
            self.states = Counter({str(state): n for state, n in states.items()})
        else:
            self.states = Counter(str(state) for state in states)
        self.items = list(items)

    def __rich__(self) -> RenderableType:
        total = sum(self.states.values())
        done = sum(n for state, n in self.states.items() if state in FINISHED)
        bar = Table.grid(padding=(0, 1))
        bar.add_row(
            Text(self.label, style="bold"),
            ProgressBar(total=max(total, 1), completed=done, width=40),
            Text(f"{done}/{total}"),
            Text(seconds_text(time.monotonic() - self.started)),
            state_text(self.run_state),
        )
        if self.items:
            bar.add_row(*self.items_row())
        return Group(bar, self.counts_text())

    def items_row(self) -> tuple[RenderableType, ...]:
        """The item bar: items finished over the items counted so far (summed over the run's
        iterable task instances); ``+`` while some have not counted theirs yet, a pulsing bar
        while none has.
        """
        finished = sum(progress.finished for progress in self.items)
        totals = [progress.total for progress in self.items if progress.total is not None]
        failed = sum(progress.failed for progress in self.items)
        skipped = sum(progress.skipped for progress in self.items)
        if totals:
            suffix = "+" if len(totals) < len(self.items) else ""
            bar = ProgressBar(total=max(sum(totals), 1), completed=finished, width=40)
            count = f"{finished}/{sum(totals)}{suffix}"
        else:
            bar, count = ProgressBar(total=None, width=40), f"{finished}/?"
        detail = Text()
        if failed:
            detail.append(f"{failed} failed", style=STATE_STYLES["failed"])
        if skipped:
            detail.append(("  " if failed else "") + f"{skipped} skipped", style="bright_black")
        # The last column (the run's state above) takes the detail: it may widen freely.
        return Text("items"), bar, Text(count), Text(), detail

    def counts_text(self) -> Text:
        text = Text()
        for state in STATE_STYLES:
            if self.states.get(state):
                text.append(f"{state} {self.states[state]}", style=STATE_STYLES[state])
                text.append("  ")
        if self.run_state == "queued" and time.monotonic() - self.started > 5:
            text.append("(still queued: is a scheduler running?)", style="dim")
        text.rstrip()
        return text
