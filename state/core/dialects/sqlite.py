"""The store on SQLite: one file, one writer at a time, statements run through SQLAlchemy.

Every transaction takes the write lock at BEGIN (``BEGIN IMMEDIATE``), so two writers queue on
the busy timeout and a pass holds the whole store for its few milliseconds: no row lock is
needed, and none is written (``FOR UPDATE`` is not SQLite's).

Statements:
- ``claim``: the compare-and-set ``UPDATE … RETURNING`` of the task instance, then a SELECT of
  its run and DAG (``RUN_OF_CLAIM``): SQLite cannot return the columns of a joined table;
- ``beat``: ``assert_fence``'s UPDATE of the heartbeat, fenced by the try;
- ``end_and_take``: in one short transaction, ``MAY_HAND_OVER``, the taker's move to ``queued``
  (``SUCCESSOR_BY_NAME`` or ``FIRST_WAITING[_AMONG]``, the task ids as an expanded list), and
  the fenced move that ends the try;
- ``queue``: ``scheduled -> queued … RETURNING``;
- ``lock_run`` / ``try_lock_run``: ``RUN_HEAD`` / ``RUN_WITH_DAG`` read in the transaction that
  holds the write lock (``try_lock_run`` never skips: nobody else holds the run meanwhile);
- ``write_checkpoint``: ``beat`` then ``INSERT … ON CONFLICT DO UPDATE``.

Engine: WAL mode (commits ~4x cheaper than with the default journal, and readers do not block
the writer), ``synchronous=NORMAL``, a busy timeout, foreign keys on.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Engine,
    Row,
    bindparam,
    create_engine,
    event,
    func,
    make_url,
    select,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session
from sqlalchemy.types import JSON

from state.core import (
    DAG_TABLE,
    RUN_TABLE,
    STATE_TABLE,
    Fence,
    TaskInstanceState,
    transition_tis,
    transition_tis_returning,
)
from state.core.dialects.base import Claimed, EngineOptions, RunHead, RunWithDag, SlotTaker
from state.core.dialects.common import (
    MAY_HAND_OVER,
    RUN_COLUMNS,
    RUN_HEAD,
    RUN_WITH_DAG,
    WAITING_TRY,
    SqlStatements,
    first_waiting,
    queued_values,
)

TI = TaskInstanceState
_RUN, _DAG = RUN_TABLE, DAG_TABLE

#: How long a SQLite connection waits for another one's lock (its busy timeout), in seconds.
SQLITE_BUSY_SECONDS = 30

# The claimed try's run and DAG: a second statement of the claim, in its transaction.
RUN_OF_CLAIM = (
    select(*RUN_COLUMNS)
    .select_from(_RUN.join(_DAG, _DAG.c.dag_id == _RUN.c.dag_id))
    .where(_RUN.c.dag_id == bindparam("of_dag"), _RUN.c.run_id == bindparam("of_run"))
)
FIRST_WAITING_AMONG = first_waiting(
    WAITING_TRY.c.task_id.in_(bindparam("of_tasks", expanding=True))
)


class SQLite(SqlStatements):
    """The store's statements as SQLite runs them."""

    name = "sqlite"
    autocommit_statements = False
    wakes_schedulers = False
    embedded = True
    # SQLite cannot ALTER most things: Alembic copies the table instead ("batch" mode). The
    # engine opens its transactions itself (BEGIN IMMEDIATE), so DDL is atomic here too: Alembic
    # would otherwise assume it is not and commit after each statement.
    migration_options: Mapping[str, Any] = {"render_as_batch": True, "transactional_ddl": True}
    first_waiting_among = FIRST_WAITING_AMONG

    def claim(
        self, session: Session, ti_id: int, try_number: int, values: Mapping[str, Any]
    ) -> Claimed | None:
        moved = transition_tis_returning(
            session, [ti_id], [TI.QUEUED], TI.RUNNING, values, try_number
        )
        if not moved:
            return None
        ti = moved[0]
        run = session.execute(RUN_OF_CLAIM, {"of_dag": ti.dag_id, "of_run": ti.run_id}).one()
        return Claimed(ti, run)

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
        # The taker first: the ended try still counts as active there, as in PostgreSQL's one
        # statement, whose snapshot predates the end.
        head = session.execute(MAY_HAND_OVER, {"run_pk": run_pk, "version": version_hash}).first()
        queued: Sequence[Row[Any]] = []
        if head is not None:
            chosen, waiting, _ = self.chosen(taker)
            queued = transition_tis_returning(
                session, chosen, [waiting], TI.QUEUED, queued_values(now)
            )
        end_state, end_values = end
        if transition_tis(session, [fence.ti_id], [TI.RUNNING], end_state, end_values, fence) != 1:
            session.rollback()
            return False, []
        return True, queued

    def lock_run(self, session: Session, run_pk: int) -> RunHead | None:
        return session.execute(RUN_HEAD, {"run_pk": run_pk}).first()

    def try_lock_run(self, session: Session, run_pk: int) -> RunWithDag | None:
        options = {"populate_existing": True}
        return session.execute(RUN_WITH_DAG, {"run_pk": run_pk}, execution_options=options).first()

    def write_checkpoint(self, session: Session, fence: Fence, row: Mapping[str, Any]) -> None:
        self.beat(session, fence)
        statement = sqlite.insert(STATE_TABLE).values({**row, "expires_at": None})
        update = {"value": row["value"], "expires_at": None, "updated_at": row["updated_at"]}
        session.execute(statement.on_conflict_do_update(index_elements=UNIQUE, set_=update))

    def insert(self, table: Any) -> Any:
        return sqlite.insert(table)

    def any_of(self, column: Any, values: Sequence[str]) -> ColumnElement[bool]:
        result: ColumnElement[bool] = column.in_(list(values))
        return result

    def aggregate_list(self, column: Any) -> ColumnElement[Any]:
        return func.json_group_array(column, type_=JSON)

    def utc_day(self, column: Any) -> ColumnElement[Any]:
        return func.date(column)  # stored as UTC text (UTCDateTime)

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[float]:
        days: ColumnElement[float] = func.julianday(end) - func.julianday(start)
        return days * 86400.0

    def notify_run_created(self, session: Session, channel: str) -> None:
        """Nothing: a scheduler on SQLite waits its whole interval (``state.engine.run_wake``)."""

    def create_engine(self, url: str, options: EngineOptions) -> Engine:
        database = make_url(url).database
        pooled: dict[str, int] = {}
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
            # A file's pool is sized as PostgreSQL's (an API server's bound needs it); an
            # in-memory database keeps SQLAlchemy's one connection per thread.
            pooled = {"pool_size": options.pool_size, "max_overflow": options.max_overflow}
        engine = create_engine(
            url, connect_args={"timeout": SQLITE_BUSY_SECONDS, "isolation_level": None}, **pooled
        )
        event.listen(engine, "connect", _pragmas)
        event.listen(engine, "begin", _begin_immediate)
        return engine


#: The unique key of a state-store row.
UNIQUE = ["dag_id", "run_id", "task_id", "map_index", "key"]


def _pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_SECONDS * 1000}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another connection holds the file.

    The switch needs the file to itself for a moment, and SQLite refuses it at once ("database
    is locked"), busy timeout or not, while another connection switches or writes: two processes
    opening a new store together (``standalone`` and a ``dags trigger``) failed that way.
    """
    deadline = time.monotonic() + SQLITE_BUSY_SECONDS
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _begin_immediate(conn: Any) -> None:
    # Take the write lock at BEGIN so two writers queue on busy_timeout instead of one of them
    # failing with "database is locked" when it upgrades a read transaction.
    conn.exec_driver_sql("BEGIN IMMEDIATE")
