"""The store on PostgreSQL (psycopg 3): row locks, one statement per hop, the driver's own path.

The statements every try runs (the claim, the end and its hand-over) are compiled once, by
name, and sent by psycopg itself (``state.core.dialects._driver``): SQLAlchemy's execution layers
cost a supervisor more CPU than the server's work. A lone statement runs in autocommit (no BEGIN and
COMMIT round trips).

Statements:
- ``claim``: one ``UPDATE task_instance … FROM dag_run, dag … RETURNING`` (the compare-and-set
  ``queued -> running`` of one try, returning ``CLAIM_TI_COLUMNS`` and ``RUN_COLUMNS``), on the
  driver;
- ``beat``: ``assert_fence``'s UPDATE of the heartbeat, fenced by the try, which takes the row
  lock (a zombie sweep or a clear committed first makes it fail);
- ``end_and_take``: one SELECT over three CTEs, on the driver: ``ended`` (the fenced move that
  ends the try), ``head`` (``MAY_HAND_OVER``, the run's row locked ``FOR UPDATE``), ``queued``
  (the taker ``SUCCESSOR_BY_NAME`` or ``FIRST_WAITING[_AMONG]`` moved to ``queued``; its task
  ids as one array parameter, since a text compiled once cannot expand a list);
- ``queue``: ``scheduled -> queued … RETURNING``;
- ``lock_run``: ``RUN_HEAD … FOR UPDATE OF dag_run`` (waits);
  ``try_lock_run``: ``RUN_WITH_DAG … FOR UPDATE OF dag_run SKIP LOCKED``;
- ``write_checkpoint``: ``FENCED_UPSERT``, the beat as a CTE and the upsert in one statement,
  with ``synchronous_commit`` off for its transaction;
- ``notify_run_created``: ``NOTIFY <channel>``.

Engine: a pool sized for the worker's slots; TCP keepalives and ``tcp_user_timeout`` on both
ends of a connection from the network bound; a connection left idle is pinged before reuse.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Dialect,
    Engine,
    Float,
    Insert,
    Integer,
    Row,
    Select,
    String,
    any_,
    bindparam,
    cast,
    create_engine,
    event,
    exc,
    exists,
    extract,
    func,
    literal,
    null,
    select,
    text,
    true,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from state.core import (
    RUN_TABLE,
    STATE_TABLE,
    TI_TABLE,
    Chosen,
    DagRun,
    Fence,
    TaskInstanceState,
    TryFenced,
    is_expression,
    ti_move,
)
from state.core.dialects._driver import CompiledOnce
from state.core.dialects.base import Claimed, EngineOptions, RunHead, RunWithDag, SlotTaker
from state.core.dialects.common import (
    CLAIM_TI_COLUMNS,
    ENQUEUED,
    JOIN_RUN,
    MAY_HAND_OVER,
    RUN_COLUMNS,
    RUN_HEAD,
    RUN_WITH_DAG,
    WAITING_TRY,
    SqlStatements,
    first_waiting,
    in_utc,
    queued_values,
)

TI = TaskInstanceState
_TI, _RUN = TI_TABLE, RUN_TABLE

# The claimed (or ended) task instance as a one-id SELECT: the statement then has no list
# parameter to expand, and compiles to one SQL text.
_CLAIMED = select(bindparam("claimed_id", type_=Integer))
_ENDED = select(bindparam("ended_id", type_=Integer))
FIRST_WAITING_AMONG = first_waiting(
    WAITING_TRY.c.task_id == any_(bindparam("of_tasks", type_=ARRAY(String)))
)
# The run's row locked: a scheduler's pass holding it goes first.
_HEAD_LOCKED = MAY_HAND_OVER.with_for_update(of=_RUN)
LOCK_RUN_HEAD = RUN_HEAD.with_for_update(of=_RUN)
TRY_LOCK_RUN = RUN_WITH_DAG.with_for_update(of=DagRun, skip_locked=True)


class PostgreSQL(SqlStatements):
    """The store's statements as PostgreSQL runs them."""

    name = "postgresql"
    autocommit_statements = True
    wakes_schedulers = True
    embedded = False
    migration_options: Mapping[str, Any] = {"render_as_batch": False, "transactional_ddl": None}
    first_waiting_among = FIRST_WAITING_AMONG

    def __init__(self) -> None:
        self._compiled = CompiledOnce()

    def claim(
        self, session: Session, ti_id: int, try_number: int, values: Mapping[str, Any]
    ) -> Claimed | None:
        statement, params = ti_move(
            Chosen(_CLAIMED, {"claimed_id": ti_id}),
            [TI.QUEUED],
            TI.RUNNING,
            values,
            try_number=try_number,
            returning=CLAIM_TI_COLUMNS,
            joined=JOIN_RUN,
            also=RUN_COLUMNS,
        )
        rows = self._compiled.run(session, ("claim", _shape(values)), lambda: statement, params)
        return Claimed(rows[0], in_utc(rows[0])) if rows else None

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
        # Locks in the usual order: the ended task instance, the run, the taker.
        end_state, end_values = end
        ended = Chosen(_ENDED, {"ended_id": fence.ti_id})
        move, params = ti_move(ended, [TI.RUNNING], end_state, end_values, fence)
        chosen, waiting, taker_shape = self.chosen(taker)
        queue, queue_params = ti_move(chosen, [waiting], TI.QUEUED, queued_values(now))
        name = ("end_and_take", taker_shape, end_state, _shape(end_values))
        rows = self._compiled.run(
            session,
            name,
            lambda: _end_and_queue(move, queue, params.keys() & queue_params.keys()),
            {**params, **queue_params, "run_pk": run_pk, "version": version_hash},
        )
        recorded = bool(rows and rows[0].recorded)
        return recorded, [row for row in rows if row.id is not None]

    def lock_run(self, session: Session, run_pk: int) -> RunHead | None:
        return session.execute(LOCK_RUN_HEAD, {"run_pk": run_pk}).first()

    def try_lock_run(self, session: Session, run_pk: int) -> RunWithDag | None:
        options = {"populate_existing": True}
        return session.execute(TRY_LOCK_RUN, {"run_pk": run_pk}, execution_options=options).first()

    def write_checkpoint(self, session: Session, fence: Fence, row: Mapping[str, Any]) -> None:
        params = {f"row_{name}": value for name, value in row.items()}
        params.update(fence_ti=fence.ti_id, fence_try=fence.try_number, fence_token_=fence.token)
        if session.execute(FENCED_UPSERT, params).first() is None:  # the fence did not match
            raise TryFenced(
                f"try {fence.try_number} of task instance {fence.ti_id} no longer holds it"
            )

    def insert(self, table: Any) -> Any:
        return postgresql.insert(table)

    def any_of(self, column: Any, values: Sequence[str]) -> ColumnElement[bool]:
        # One array parameter: an IN list is a parameter a value, and the driver's dialect
        # writes each with its cast on every request (2 ms of a grid's 75 ids).
        result: ColumnElement[bool] = column == any_(literal(list(values), ARRAY(String)))
        return result

    def aggregate_list(self, column: Any) -> ColumnElement[Any]:
        # Measured: PostgreSQL's json_agg cost a grid more than its array_agg.
        return func.array_agg(column)

    def utc_day(self, column: Any) -> ColumnElement[Any]:
        # In UTC whatever the session's TimeZone: a timestamptz's date() would follow it.
        return func.to_char(func.timezone("UTC", column), "YYYY-MM-DD")

    def seconds_between(self, start: Any, end: Any) -> ColumnElement[float]:
        return cast(extract("epoch", end - start), Float)

    def notify_run_created(self, session: Session, channel: str) -> None:
        session.execute(text(f"NOTIFY {channel}"))

    def create_engine(self, url: str, options: EngineOptions) -> Engine:
        seconds = max(options.network_seconds, 1.0)
        engine = create_engine(
            url,
            pool_size=options.pool_size,
            max_overflow=options.max_overflow,
            connect_args=_tcp_timeouts(seconds),
        )
        event.listen(engine, "connect", functools.partial(_server_side_timeouts, seconds))
        event.listen(engine.pool, "checkin", _note_idle_since)
        event.listen(engine.pool, "checkout", functools.partial(_ping_if_idle, engine.dialect))
        return engine


def _shape(values: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of a move's values its SQL text depends on: their names, and the expressions
    written into it (a bound value's own value is a parameter). Built on every claim and end:
    a list, not a generator, and a name alone for a bound value (~1 µs)."""
    return tuple(
        [(name, value) if is_expression(value) else name for name, value in values.items()]
    )


def _end_and_queue(move: Any, queue: Any, shared: set[str]) -> Select[Any]:
    """The end, the run's lock and the queuing as CTEs of one SELECT.

    The SELECT returns a row even when nothing was queued, saying whether the end was recorded.
    """
    if shared:  # one would silently take the other's value
        raise ValueError(f"the two moves share parameters: {sorted(shared)}")
    ended = move.returning(_TI.c.id).cte("ended")
    head = _HEAD_LOCKED.where(exists(select(ended.c.id))).cte("head")
    queued = queue.where(exists(select(head.c.id))).returning(*ENQUEUED).cte("queued")
    recorded = select(func.count()).select_from(ended).scalar_subquery().label("recorded")
    one_row = select(literal(1).label("one")).subquery("one_row")
    return select(recorded, *queued.c).select_from(one_row.outerjoin(queued, true()))


#: The unique key of a state-store row.
UNIQUE = ["dag_id", "run_id", "task_id", "map_index", "key"]


def _fenced_upsert() -> Insert:
    """``assert_fence`` and the upsert as one statement.

    The fence is a data-modifying CTE: it takes the task instance's row lock and bumps its
    heartbeat, as ``assert_fence`` does, and the row is written only if it matched. Its
    RETURNING also turns off the wait for the WAL flush for this transaction alone: a checkpoint
    lost to a crash of the server costs what an unwritten round costs (its items run again).
    """
    ti, state = TI_TABLE, STATE_TABLE
    fence = (
        update(ti)
        .where(
            ti.c.id == bindparam("fence_ti"),
            ti.c.try_number == bindparam("fence_try"),
            ti.c.fence_token == bindparam("fence_token_"),
            ti.c.state == TaskInstanceState.RUNNING,
        )
        .values(last_heartbeat=bindparam("row_updated_at"))
        .returning(func.set_config("synchronous_commit", "off", True).label("flush"))
        .cte("fence")
    )
    columns = [*UNIQUE, "value", "updated_at"]
    row = select(*(bindparam(f"row_{name}", type_=state.c[name].type) for name in columns))
    statement = postgresql.insert(state).from_select(columns, row.select_from(fence))
    upsert = statement.on_conflict_do_update(
        index_elements=UNIQUE,
        set_={
            "value": statement.excluded.value,
            "expires_at": null(),
            "updated_at": statement.excluded.updated_at,
        },
    )
    return upsert.returning(state.c.id)  # a row count does not survive the CTE here: a row does


FENCED_UPSERT = _fenced_upsert()


#: A pooled connection idle for longer than this is pinged before it is used again.
IDLE_SECONDS_BEFORE_PING = 10.0


def _probe_seconds(seconds: float) -> int:
    """The keepalive probe interval for a network bound of ``seconds``."""
    return max(int(seconds / 3), 1)


def _tcp_timeouts(seconds: float) -> dict[str, Any]:
    probe = _probe_seconds(seconds)
    return {
        "connect_timeout": max(int(seconds), 2),
        # Unacknowledged data for this long: the connection is gone (Linux, libpq >= 12).
        "tcp_user_timeout": int(seconds * 1000),
        # A peer silent while we wait for its answer: probed after ``probe`` idle seconds.
        "keepalives": 1,
        "keepalives_idle": probe,
        "keepalives_interval": probe,
        "keepalives_count": 2,
    }


def _server_side_timeouts(seconds: float, dbapi_connection: Any, _record: Any) -> None:
    """The server's end of the connection gets the same bounds as ours.

    A connection this process gave up on while the network was cut (``tcp_user_timeout``) is
    closed here only: the server's backend waits for its next statement, still in its
    transaction and holding its row locks, until its own keepalives notice, which by default is
    two hours; meanwhile every try that needs those rows waits for them. Set as session settings
    (not the ``options`` startup parameter, which PgBouncer refuses); committed, or the pool's
    reset would roll them back.
    """
    probe = _probe_seconds(seconds)
    with dbapi_connection.cursor() as cursor:
        cursor.execute(
            f"SET tcp_keepalives_idle = {probe}; SET tcp_keepalives_interval = {probe};"
            f" SET tcp_keepalives_count = 2; SET tcp_user_timeout = {int(seconds * 1000)}"
        )
    dbapi_connection.commit()


# ``pool_pre_ping`` pings on every checkout: one round trip more for each of a try's three
# transactions, 7% of a worker's time on a noop try. A connection in steady use is known to
# be alive; the ones that go stale (a server restart, an idle timeout, a dropped NAT entry) are
# those left idle, so only those are pinged. A connection that dies while in use fails that
# statement, and SQLAlchemy then invalidates the rest of the pool.
def _note_idle_since(_dbapi_connection: Any, record: Any) -> None:
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(dialect: Dialect, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    idle_since = record.info.get("idle_since")
    if idle_since is None or time.monotonic() - idle_since < IDLE_SECONDS_BEFORE_PING:
        return
    try:
        dialect.do_ping(dbapi_connection)  # what pool_pre_ping runs
    except Exception as error:
        # The pool discards this connection and checks out (or opens) another.
        raise exc.DisconnectionError(
            f"a pooled connection idle for a while is gone: {error}"
        ) from error
