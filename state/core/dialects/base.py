"""What a store's dialect provides: the statements every try runs, and the rest where SQL differs.

``HotStatements`` names the few statements on the path of every try, each written per dialect
(``state.core.dialects.postgresql``, ``state.core.dialects.sqlite``) and run by one contract test
suite on
both (``tests/state/test_hot_statements.py``):

- ``claim``: a try's compare-and-set ``queued -> running``, with the run's and the DAG's columns
  the try needs;
- ``beat``: the try's heartbeat, fenced by the try;
- ``end_and_take``: a try's end recorded, and its slot handed to the task instance that takes it;
- ``queue``: ready task instances ``scheduled -> queued``, each a new try;
- ``lock_run`` / ``try_lock_run``: a run's row locked for a pass, waiting for it (a supervisor's
  pass after its try's end) or skipping it when another holds it (a scheduler's pass).

``StoreDialect`` adds what else differs: how an engine is made, upserts, a fenced checkpoint
write, a list parameter and a list aggregate, the run wake-ups. The values that cross this
interface are plain: a caller never builds SQL for it, nor keeps an object alive for a cache.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from sqlalchemy import ColumnElement, Engine, Row
from sqlalchemy.orm import Session

from state.core import DagRun, Fence


@dataclass(frozen=True)
class NextByName:
    """The ended task's one successor, by name, still ``none``; unless tries of its run wait
    in ``scheduled`` for slots (the full pass queues those first)."""

    dag_id: str
    run_id: str
    task_id: str


@dataclass(frozen=True)
class FirstInPool:
    """The run's first try waiting in ``scheduled`` for a slot of ``pool`` (of one of the tasks
    ``among``, when given), unless the pool holds more than its slots now allow."""

    dag_id: str
    run_id: str
    pool: str
    among: tuple[str, ...] | None = None


#: The task instance that takes an ended try's slot, said as what chooses it.
SlotTaker = NextByName | FirstInPool

#: A run's head as a supervisor's pass reads it: dag_id, run_id, state, version_hash, its DAG's
#: ``dag_version`` and ``is_paused`` (None when the DAG is gone).
RunHead = Row[str, str, str, str | None, str | None, bool | None]
#: A run as a scheduler's pass reads it: the mapped run, its DAG's version and pause.
RunWithDag = Row[DagRun, str | None, bool | None]


class Claimed(NamedTuple):
    """A claimed try's task instance row and its run's row (with the DAG's columns)."""

    ti: Any
    run: Any


@dataclass(frozen=True)
class EngineOptions:
    """What an engine is made with besides its URL (set by the worker: ``state.core.db``)."""

    pool_size: int
    max_overflow: int
    #: How long a connection may go unanswered before it counts as lost.
    network_seconds: float


class HotStatements(Protocol):
    """The statements every try runs, written for one dialect."""

    def claim(
        self, session: Session, ti_id: int, try_number: int, values: Mapping[str, Any]
    ) -> Claimed | None:
        """``queued -> running`` for try ``try_number`` of ``ti_id``, writing ``values``; the
        rows the try needs, or None when the compare-and-set lost (a stale or duplicate try)."""
        ...

    def beat(self, session: Session, fence: Fence) -> None:
        """The try's heartbeat; ``TryFenced`` unless ``fence`` still holds its running try."""
        ...

    def end_and_take(
        self,
        session: Session,
        fence: Fence,
        end: tuple[Any, Mapping[str, Any]],
        run_pk: int,
        taker: SlotTaker,
        version_hash: str,
        now: dt.datetime,
    ) -> tuple[bool, Sequence[Row[Any]]]:
        """Record a try's end (its state and values, fenced) and queue ``taker`` in its slot if
        the run may hand it over at ``version_hash``; whether the end was recorded, and the
        taker's row as queued (none when nothing was)."""
        ...

    def queue(
        self, session: Session, ti_ids: Collection[int], now: dt.datetime
    ) -> Sequence[Row[Any]]:
        """``scheduled -> queued`` for ``ti_ids``, each a new try; the rows as queued."""
        ...

    def lock_run(self, session: Session, run_pk: int) -> RunHead | None:
        """The run's head (ids, state, version, its DAG's version and pause), its row locked
        until commit: waits for a pass that holds it."""
        ...

    def try_lock_run(self, session: Session, run_pk: int) -> RunWithDag | None:
        """``(run, its DAG's version, paused)``, the run a mapped object locked until commit;
        None when another process holds it (the scheduler moves on)."""
        ...


class StoreDialect(HotStatements, Protocol):
    """A dialect the store runs on: its hot statements and the other places SQL differs."""

    #: SQLAlchemy's name of the dialect (``postgresql``, ``sqlite``).
    name: str
    #: Whether a lone statement runs in autocommit (``state.core.db.statement_scope``).
    autocommit_statements: bool
    #: Whether schedulers can be woken when a run is created (LISTEN and NOTIFY).
    wakes_schedulers: bool
    #: Whether the store is a file of this machine (the embedded default), which the command
    #: line migrates on first use rather than asking for ``tradewind db migrate``.
    embedded: bool
    #: What Alembic is told of the dialect (``state.core.migrate.context_options``).
    migration_options: Mapping[str, Any]

    def create_engine(self, url: str, options: EngineOptions) -> Engine:
        """The pooled engine for ``url``, with this dialect's connection settings."""
        ...

    def insert(self, table: Any) -> Any:
        """The dialect's ``INSERT``, which has ``on_conflict_do_nothing/do_update``."""
        ...

    def write_checkpoint(self, session: Session, fence: Fence, row: Mapping[str, Any]) -> None:
        """Upsert one state-store ``row`` (its unique key, ``value``, ``updated_at``) fenced by
        the try: ``TryFenced``, and nothing written, unless ``fence`` holds its try."""
        ...

    def any_of(self, column: Any, values: Sequence[str]) -> ColumnElement[bool]:
        """``column`` is one of ``values``."""
        ...

    def aggregate_list(self, column: Any) -> ColumnElement[Any]:
        """The grouped rows' ``column`` as one list."""
        ...

    def utc_day(self, column: Any) -> ColumnElement[Any]:
        """The UTC calendar day of a ``UTCDateTime`` ``column``, as ``YYYY-MM-DD`` text."""

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[float]:
        """``end - start`` in seconds (a duration a browse filters by)."""
        ...

    def notify_run_created(self, session: Session, channel: str) -> None:
        """Wake the schedulers listening on ``channel`` once the transaction commits."""
        ...
