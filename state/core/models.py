"""SQLAlchemy 2 models of the shared SQL store.

Every table the fleet shares lives here; Alembic migrations in ``state/migrations`` follow these
models, and a test fails when a model changes without a migration.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from state.core.cipher import Sealed
from state.core.enums import DagRunState, TaskInstanceState

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def as_utc(value: dt.datetime | None) -> dt.datetime | None:
    """A datetime read from the store, in UTC (a naive one is UTC already: SQLite keeps none)."""
    if value is None:
        return None
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC datetime on every dialect (SQLite keeps no zone of its own)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware UTC datetime")
        return value.astimezone(dt.UTC)

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        return as_utc(value)


#: The newest migration in ``state/migrations``: the schema these models describe (a test checks
#: it against Alembic's head). Read without Alembic, which is half a second of a command's start.
SCHEMA_REVISION = "0022_hitl"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class DagModel(Base):
    """A DAG as its file last parsed: serialized structure and the hash of that structure."""

    __tablename__ = "dag"

    dag_id: Mapped[str] = mapped_column(String(250), primary_key=True)
    fileloc: Mapped[str] = mapped_column(Text)
    # JSONB on PostgreSQL: a claim reads one task's slice of a large DAG's structure, and
    # plain json would re-parse the whole document for it (~7 ms for a 2,000-task DAG).
    structure: Mapped[dict[str, Any]] = mapped_column(JSON().with_variant(JSONB(), "postgresql"))
    version_hash: Mapped[str] = mapped_column(String(64))
    is_paused: Mapped[bool] = mapped_column(Boolean, default=False)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    last_parsed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_dagrun_after: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The data interval of that next run, for a DAG scheduled by a timetable object: kept as
    # the timetable answered, since it may answer differently once the run is due.
    next_dagrun_data_interval_start: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime, nullable=True
    )
    next_dagrun_data_interval_end: Mapped[dt.datetime | None] = mapped_column(
        UTCDateTime, nullable=True
    )
    # What the DAG list searches and filters by, copied out of the structure when it is stored
    # (state/records/dag_facets.py): 5,000 DAGs are filtered without decoding 5,000 structures.
    display_name: Mapped[str | None] = mapped_column(String(250), nullable=True)
    owners: Mapped[str | None] = mapped_column(String(2000), nullable=True)  # ",a,b," (LIKE)


class DagTag(Base):
    """One tag of a DAG (as Airflow's ``dag_tag``): the DAG list's tag filter reads an index."""

    __tablename__ = "dag_tag"
    __table_args__ = (Index("ix_dag_tag_name", "name"),)

    dag_id: Mapped[str] = mapped_column(String(250), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), primary_key=True)


class DagImportError(Base):
    """A DAG file that failed to import, with the one-line error and the traceback."""

    __tablename__ = "dag_import_error"

    fileloc: Mapped[str] = mapped_column(String(1000), primary_key=True)
    error: Mapped[str] = mapped_column(Text)
    traceback: Mapped[str] = mapped_column(Text, default="")
    timestamp: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class DagRun(Base):
    __tablename__ = "dag_run"
    __table_args__ = (
        UniqueConstraint("dag_id", "run_id"),
        Index("ix_dag_run_state", "state"),
        # A DAG's newest runs (the grid, the DAG list), and the runs ended before a time (the
        # history clean): read from an index, whatever the history (bench/history.py).
        Index("ix_dag_run_dag_id_id", "dag_id", "id"),
        Index("ix_dag_run_end_date", "end_date"),
        # The Runs browse sorted by start or logical date, across DAGs (api/pages/browse.py).
        Index("ix_dag_run_start_date", "start_date"),
        Index("ix_dag_run_logical_date", "logical_date"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dag_id: Mapped[str] = mapped_column(String(250))
    run_id: Mapped[str] = mapped_column(String(250))
    state: Mapped[DagRunState] = mapped_column(String(20), default=DagRunState.QUEUED)
    run_type: Mapped[str] = mapped_column(String(20), default="manual")
    conf: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    version_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    logical_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    data_interval_start: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    data_interval_end: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    start_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    end_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The partition this run is, for a partitioned DAG (scheduler/partition_runs.py).
    partition_key: Mapped[str | None] = mapped_column(String(250), nullable=True)
    partition_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Who made the run and by which way in (Airflow's ``DagRunTriggeredByType``: ui, cli,
    # rest_api, timetable, asset, backfill, test, operator); NULL for runs made before 0016.
    triggered_by: Mapped[str | None] = mapped_column(String(20), nullable=True)
    triggering_user_name: Mapped[str | None] = mapped_column(String(250), nullable=True)
    # A person's note on the run, with who wrote it last and when (state/records/notes.py).
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    note_user: Mapped[str | None] = mapped_column(String(250), nullable=True)
    note_updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)


class TaskInstance(Base):
    """One task of one DAG run (one map index of it), across all of its tries.

    ``fence_token`` names the try that holds the task instance: it is set when a supervisor
    claims the try, and every later write of that try names it (DESIGN.md §1).
    """

    __tablename__ = "task_instance"
    __table_args__ = (
        UniqueConstraint("dag_id", "run_id", "task_id", "map_index"),
        Index("ix_task_instance_state", "state"),
        # The tries waiting for a slot, per run and pool, in the order they are queued: an ended
        # try hands its slot to the first (state/engine/end.py, _hand_over) without reading the run.
        Index(
            "ix_task_instance_waiting",
            "dag_id",
            "run_id",
            "pool",
            "priority_weight",
            "id",
            postgresql_where=text("state = 'scheduled'"),
            sqlite_where=text("state = 'scheduled'"),
        ),
        # The tries waiting in a pool by weight, across runs: an end hands its slot over only if
        # no other run's try waits there with a higher weight (state/core/dialects/common.py).
        Index(
            "ix_task_instance_outranking",
            "pool",
            "priority_weight",
            postgresql_where=text("state = 'scheduled'"),
            sqlite_where=text("state = 'scheduled'"),
        ),
        # A DAG's task instances in the API list's default order: a page across its runs is
        # read from here, not sorted out of all of them (state/views/run_listing.py).
        Index("ix_task_instance_listing", "dag_id", "map_index", "task_id", "id"),
        # The same order across every DAG (``/dags/~/dagRuns/~/taskInstances``).
        Index("ix_task_instance_all_listing", "map_index", "task_id", "id"),
        # The Task Instances browse (api/pages/browse.py), newest first, by DAG and state.
        Index("ix_task_instance_dag_state", "dag_id", "state", "id"),
        Index("ix_task_instance_start_date", "start_date"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dag_id: Mapped[str] = mapped_column(String(250))
    run_id: Mapped[str] = mapped_column(String(250))
    task_id: Mapped[str] = mapped_column(String(250))
    map_index: Mapped[int] = mapped_column(Integer, default=-1)
    state: Mapped[TaskInstanceState] = mapped_column(String(20), default=TaskInstanceState.NONE)
    try_number: Mapped[int] = mapped_column(Integer, default=0)
    max_tries: Mapped[int] = mapped_column(Integer, default=1)
    # Bumped by every clear: a clear starts over, a retry resumes (DESIGN.md §5).
    generation: Mapped[int] = mapped_column(Integer, default=0)
    queue: Mapped[str] = mapped_column(String(250), default="default")
    pool: Mapped[str] = mapped_column(String(250), default="default_pool")
    # The task's total weight (tradewind/priority.py), higher first for a slot, and the slots of
    # its pool it takes: written when the task instance is made, so the SQL can order and count.
    priority_weight: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    pool_slots: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    hostname: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    start_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    end_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_heartbeat: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    next_retry_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    queued_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Re-sends of a lost queued message (no try consumed) and deliveries of the current try.
    queued_resends: Mapped[int] = mapped_column(Integer, default=0)
    deliveries: Mapped[int] = mapped_column(Integer, default=0)
    fence_token: Mapped[str | None] = mapped_column(String(64), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    items_total: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # A mapped task's name for this index: its map_index_template rendered by the last try.
    rendered_map_index: Mapped[str | None] = mapped_column(String(250), nullable=True)
    # A deferred try resumes in this method of its operator with these keyword arguments (the
    # trigger's event under ``event``): set by the deferral and the event (DESIGN.md §12).
    next_method: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    next_kwargs: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # A person's note on the task instance, with who wrote it last and when.
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    note_user: Mapped[str | None] = mapped_column(String(250), nullable=True)
    note_updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)


class TaskInstanceHistory(Base):
    """One earlier try of a task instance, kept when the try gave way to another: when it ended
    to be retried, or when its task instance was cleared (state/records/tries.py).

    The task instance's own row holds its latest try; together they are every try
    (Airflow's ``task_instance_history``). Rows go with their run.
    """

    __tablename__ = "task_instance_history"
    __table_args__ = (UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "try_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dag_id: Mapped[str] = mapped_column(String(250))
    run_id: Mapped[str] = mapped_column(String(250))
    task_id: Mapped[str] = mapped_column(String(250))
    map_index: Mapped[int] = mapped_column(Integer, default=-1)
    try_number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str | None] = mapped_column(String(20), nullable=True)
    max_tries: Mapped[int] = mapped_column(Integer, default=1)
    queue: Mapped[str] = mapped_column(String(250), default="default")
    pool: Mapped[str] = mapped_column(String(250), default="default_pool")
    pool_slots: Mapped[int] = mapped_column(Integer, default=1)
    priority_weight: Mapped[int] = mapped_column(Integer, default=1)
    hostname: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    queued_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    start_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    end_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class EventLog(Base):
    """Who did what, when and from where (Airflow's ``event_log``): one row per action.

    ``origin`` is the way in (``ui``, ``api``, ``cli``) and ``client`` the address it came
    from (the CLI's host). ``extra`` is JSON text and never holds a secret
    (state/records/events.py). ``tradewind db clean`` deletes old rows by ``dttm``.
    """

    __tablename__ = "event_log"
    __table_args__ = (
        Index("ix_event_log_dttm", "dttm"),
        Index("ix_event_log_dag_id", "dag_id", "id"),
        Index("ix_event_log_event", "event", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dttm: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    event: Mapped[str] = mapped_column(String(60))
    owner: Mapped[str | None] = mapped_column(String(500), nullable=True)
    origin: Mapped[str] = mapped_column(String(10))
    client: Mapped[str | None] = mapped_column(String(255), nullable=True)
    dag_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    task_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    run_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    map_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    try_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    logical_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    extra: Mapped[str | None] = mapped_column(Text, nullable=True)


class XCom(Base):
    __tablename__ = "xcom"
    __table_args__ = (UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dag_id: Mapped[str] = mapped_column(String(250))
    run_id: Mapped[str] = mapped_column(String(250))
    task_id: Mapped[str] = mapped_column(String(250))
    map_index: Mapped[int] = mapped_column(Integer, default=-1)
    key: Mapped[str] = mapped_column(String(512))
    # JSON text as the backend wrote it: a value, or a reference to an object elsewhere.
    value: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class TaskStateValue(Base):
    """One key of a task instance's state store (the checkpoints of iterable tasks included)."""

    __tablename__ = "task_state"
    __table_args__ = (UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dag_id: Mapped[str] = mapped_column(String(250))
    run_id: Mapped[str] = mapped_column(String(250))
    task_id: Mapped[str] = mapped_column(String(250))
    map_index: Mapped[int] = mapped_column(Integer, default=-1)
    key: Mapped[str] = mapped_column(String(512))
    value: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Connection(Base):
    """What a hook connects with; ``password`` and ``extra`` are sealed at rest (cipher.py)."""

    __tablename__ = "connection"

    conn_id: Mapped[str] = mapped_column(String(250), primary_key=True)
    conn_type: Mapped[str] = mapped_column(String(500), default="generic")
    host: Mapped[str | None] = mapped_column(String(500), nullable=True)
    login: Mapped[str | None] = mapped_column(String(500), nullable=True)
    stored_password: Mapped[str | None] = mapped_column("password", Text, nullable=True)
    is_encrypted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    schema: Mapped[str | None] = mapped_column(String(500), nullable=True)
    port: Mapped[int | None] = mapped_column(Integer, nullable=True)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    # A JSON object, or the JSON string of its sealed text when ``is_extra_encrypted``.
    stored_extra: Mapped[Any] = mapped_column("extra", JSON, default=dict)
    is_extra_encrypted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    password = Sealed[str | None](
        "stored_password", "is_encrypted", "connection {0.conn_id!r}'s password"
    )
    extra = Sealed[dict[str, Any]](
        "stored_extra", "is_extra_encrypted", "connection {0.conn_id!r}'s extra", as_json=True
    )


class Variable(Base):
    """A named value; sealed at rest, secret (``is_secret``) or not, as Airflow does."""

    __tablename__ = "variable"

    key: Mapped[str] = mapped_column(String(250), primary_key=True)
    stored_value: Mapped[str] = mapped_column("value", Text)
    is_secret: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    is_encrypted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    value = Sealed[str]("stored_value", "is_encrypted", "variable {0.key!r}")


#: The pool of every task that names none, made with this many slots (Airflow's name and size).
DEFAULT_POOL = "default_pool"
DEFAULT_POOL_SLOTS = 128


class Pool(Base):
    """A named number of slots, shared by the task instances that name the pool.

    What is in use is counted from the task instances under this row's lock, not stored
    (docs/decisions/limits-are-counted-not-stored.md).
    """

    __tablename__ = "slot_pool"

    name: Mapped[str] = mapped_column(String(250), primary_key=True)
    slots: Mapped[int] = mapped_column(Integer, default=128)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)


class User(Base):
    """Someone who may use the API server: a name, an argon2 hash of the password, one role.

    The password itself is never stored; the role is one of ``state.records.users.Role``.
    Tokens and session cookies name the user's id and ``token_version``: raising the version
    (sign-out, a new password, a new role) ends all of them at once. Ids are never reused
    (SQLite's AUTOINCREMENT too), so a deleted user's token never names a newer user.
    """

    __tablename__ = "api_user"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    username: Mapped[str] = mapped_column(String(250), unique=True)
    password_hash: Mapped[str] = mapped_column(String(512))
    role: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    token_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class Asset(Base):
    """An asset some DAG names (an outlet, a schedule) or an event updated, keyed by its URI."""

    __tablename__ = "asset"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uri: Mapped[str] = mapped_column(String(1500), unique=True)
    name: Mapped[str] = mapped_column(String(1500))
    group: Mapped[str] = mapped_column(String(1500), default="asset")
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class AssetAliasAsset(Base):
    """An asset an alias has resolved to (``outlet_events[alias].add(asset)``)."""

    __tablename__ = "asset_alias_asset"

    alias_name: Mapped[str] = mapped_column(String(1500), primary_key=True)
    asset_id: Mapped[int] = mapped_column(Integer, primary_key=True)


class AssetEvent(Base):
    """One update of an asset: by which try, with what extra (and through which alias)."""

    __tablename__ = "asset_event"
    __table_args__ = (Index("ix_asset_event_asset_id", "asset_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    asset_id: Mapped[int] = mapped_column(Integer)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    source_dag_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    source_run_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    source_task_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    source_map_index: Mapped[int] = mapped_column(Integer, default=-1)
    source_alias: Mapped[str | None] = mapped_column(String(1500), nullable=True)
    partition_key: Mapped[str | None] = mapped_column(String(250), nullable=True)
    timestamp: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class DagAssetReference(Base):
    """What a DAG's asset condition waits on (``asset:<uri>`` or ``alias:<name>``), from its sync:
    a try's end finds the DAGs to queue for without reading their structures."""

    __tablename__ = "dag_asset_reference"

    dag_id: Mapped[str] = mapped_column(String(250), primary_key=True)
    reference: Mapped[str] = mapped_column(String(1600), primary_key=True)


class AssetDagRunQueue(Base):
    """An asset updated since the DAG's last asset-triggered run: what the DAG has not consumed."""

    __tablename__ = "asset_dag_run_queue"

    target_dag_id: Mapped[str] = mapped_column(String(250), primary_key=True)
    asset_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The latest event that queued it: a run consumes the row only up to the event it read.
    last_event_id: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class PartitionDagRun(Base):
    """One downstream partition of a partitioned DAG: the asset events mapped to its key are
    logged against it until its run is created. The unique key makes it one row, and so one
    run, per DAG and partition key, whichever scheduler maps the events."""

    __tablename__ = "partition_dag_run"
    __table_args__ = (UniqueConstraint("target_dag_id", "partition_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    target_dag_id: Mapped[str] = mapped_column(String(250))
    partition_key: Mapped[str] = mapped_column(String(250))
    # Set with the run: a later event for the key is recorded, and creates no second run.
    run_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    # When its condition held but the run could not be created yet (max_active_runs).
    ready_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class PartitionEventQueue(Base):
    """An event carrying a partition key that a DAG scheduled on its asset has not mapped yet:
    one row per event, so none is skipped when ends commit out of id order."""

    __tablename__ = "partition_event_queue"

    target_dag_id: Mapped[str] = mapped_column(String(250), primary_key=True)
    asset_event_id: Mapped[int] = mapped_column(Integer, primary_key=True)


class PartitionKeyLog(Base):
    """An asset event mapped to a downstream partition, with the upstream key it carried: what
    a rollup counts against its window."""

    __tablename__ = "partition_key_log"

    partition_run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    asset_event_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    asset_id: Mapped[int] = mapped_column(Integer)
    source_partition_key: Mapped[str] = mapped_column(String(250))


class AssetStateValue(Base):
    """One key of an asset's state store: kept across runs, shared by every DAG using the asset."""

    __tablename__ = "asset_state"

    asset_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(512), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class AssetAlias(Base):
    """An alias some DAG waits on or some try emitted through, keyed by its name."""

    __tablename__ = "asset_alias"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(1500), unique=True)
    group: Mapped[str] = mapped_column(String(1500), default="asset")


class Backfill(Base):
    """A backfill of one DAG over a date range: its runs are linked by ``BackfillDagRun``.

    ``completed_at`` is stored only when the backfill is cancelled; otherwise it is derived
    from its runs (the last end, once none is left unfinished).
    """

    __tablename__ = "backfill"
    __table_args__ = (Index("ix_backfill_dag_id", "dag_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dag_id: Mapped[str] = mapped_column(String(250))
    from_date: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    to_date: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    dag_run_conf: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    is_paused: Mapped[bool] = mapped_column(Boolean, default=False)
    max_active_runs: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    cancelled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class BackfillDagRun(Base):
    """A run a backfill created (``dag_run.id``): one row per run, a run in one backfill."""

    __tablename__ = "backfill_dag_run"
    __table_args__ = (Index("ix_backfill_dag_run_backfill_id", "backfill_id"),)

    dag_run_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    backfill_id: Mapped[int] = mapped_column(Integer)


class Job(Base):
    """A long-running component (scheduler, worker, triggerer, API server, DAG processor) and
    its heartbeats, as Airflow's ``job`` table: one row per process start.

    Whether it is alive is derived when read (``state = 'running'`` and a heartbeat younger
    than the reader's threshold), never stored: a process SIGKILLed leaves its row running,
    and its heartbeat ages (state/records/jobs.py).
    """

    __tablename__ = "job"
    __table_args__ = (
        Index("ix_job_type_heartbeat", "job_type", "latest_heartbeat"),
        Index("ix_job_state_heartbeat", "state", "latest_heartbeat"),
        # Ids never reused (SQLite too): a heart whose row was deleted never beats another's.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_type: Mapped[str] = mapped_column(String(30))
    state: Mapped[str] = mapped_column(String(20))
    hostname: Mapped[str] = mapped_column(String(500))
    pid: Mapped[int] = mapped_column(Integer)
    unixname: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    # What the process calls itself where a host runs several (a Celery node's name).
    name: Mapped[str | None] = mapped_column(String(500), nullable=True)
    start_date: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    end_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    latest_heartbeat: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Trigger(Base):
    """One trigger the triggerer runs (DESIGN.md §12): a deferred try's, or an asset watcher's.

    ``classpath`` and ``kwargs`` are the trigger as its ``serialize()`` said. A deferred try's
    trigger names the task instance and the try it wakes (``ti_id``, ``try_number``); a
    watcher's names its asset and watcher instead. ``claim_token`` is the triggerer holding it,
    fencing its writes: a triggerer that stops beating (``heartbeat_at``) loses the row to
    another, and its late event is refused. ``fired_at`` and ``event``: the event that woke the
    task (a fired row is history, never claimed again); ``timeout_at``: the deferral's timeout.
    """

    __tablename__ = "trigger"
    __table_args__ = (
        Index("ix_trigger_ti_id", "ti_id"),
        # What a triggerer looks at to claim: the rows not fired yet.
        Index(
            "ix_trigger_waiting",
            "id",
            postgresql_where=text("fired_at IS NULL"),
            sqlite_where=text("fired_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    classpath: Mapped[str] = mapped_column(String(1000))
    kwargs: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    ti_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    try_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # An asset watcher's trigger: ``<asset uri> <watcher name>``, one row per watcher.
    watcher: Mapped[str | None] = mapped_column(String(1600), nullable=True, unique=True)
    triggerer_id: Mapped[str | None] = mapped_column(String(250), nullable=True)
    claim_token: Mapped[str | None] = mapped_column(String(64), nullable=True)
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    timeout_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    event: Mapped[Any] = mapped_column(JSON, nullable=True)
    fired_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class HITLDetail(Base):
    """A person's answer a task instance waits for (``awaiting_input``, docs/hitl.md).

    One row per task instance, written with the end of the try that asked (so a new try asks
    anew: the row is rewritten and its earlier answer dropped). What was asked: ``subject``,
    ``body``, ``options`` (with ``multiple``, ``defaults``), ``params`` (the form's fields, as
    ``Param.serialize()`` says), ``assignees`` (who may answer; empty: whoever may act on the
    DAG). ``timeout_at``: when ``defaults`` answer instead (or the task fails without them).
    The answer: ``chosen_options``, ``params_input``, ``responded_by`` (``{"id", "name"}``;
    None when the defaults answered), ``responded_at``.
    """

    __tablename__ = "hitl_detail"
    __table_args__ = (
        # What the scheduler's sweep reads: the unanswered questions past their timeout.
        Index(
            "ix_hitl_detail_waiting",
            "timeout_at",
            postgresql_where=text("responded_at IS NULL"),
            sqlite_where=text("responded_at IS NULL"),
        ),
    )

    ti_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    try_number: Mapped[int] = mapped_column(Integer)
    subject: Mapped[str] = mapped_column(Text)
    body: Mapped[str | None] = mapped_column(Text, nullable=True)
    options: Mapped[list[str]] = mapped_column(JSON)
    multiple: Mapped[bool] = mapped_column(Boolean, default=False)
    defaults: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    assignees: Mapped[list[dict[str, str]] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    timeout_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    responded_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    responded_by: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    chosen_options: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    params_input: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


# The tables behind the mapped classes, for the Core statements of the hot paths (a claim, a
# try's end, a scheduling pass): they skip the ORM's compile and execute layers.
class MetricValue(Base):
    """One series (or one bucket of one) of a metric the fleet's processes report.

    Counters and histograms are the fleet's totals (``process`` empty), to which each process
    adds its deltas; gauges are one row per process (``host:pid``), summed while fresh
    (state/core/metrics.py, docs/metrics.md).
    """

    __tablename__ = "metric"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    # The labels as JSON with sorted keys ("" for none).
    labels: Mapped[str] = mapped_column(String(250), primary_key=True, default="")
    # A histogram's bucket bound ("0.005", "+Inf"), "sum" or "count"; "" for the others.
    bucket: Mapped[str] = mapped_column(String(20), primary_key=True, default="")
    process: Mapped[str] = mapped_column(String(250), primary_key=True, default="")
    value: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


TI_TABLE: Table = TaskInstance.__table__  # type: ignore[assignment]
RUN_TABLE: Table = DagRun.__table__  # type: ignore[assignment]
DAG_TABLE: Table = DagModel.__table__  # type: ignore[assignment]
POOL_TABLE: Table = Pool.__table__  # type: ignore[assignment]
STATE_TABLE: Table = TaskStateValue.__table__  # type: ignore[assignment]
TRIGGER_TABLE: Table = Trigger.__table__  # type: ignore[assignment]
HITL_TABLE: Table = HITLDetail.__table__  # type: ignore[assignment]
