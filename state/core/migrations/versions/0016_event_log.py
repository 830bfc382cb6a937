"""The audit trail: the event log, every try's history, who made a run, notes.

- ``event_log``: who did what, when and from where (Airflow's table of that name, its
  timestamp ``dttm`` as Airflow's; ``tradewind db clean`` deletes by it);
- ``task_instance_history``: an earlier try of a task instance, kept when it gave way to
  another (a retry, a clear), as Airflow's table of that name;
- ``dag_run.triggered_by`` and ``triggering_user_name``: the way in and the person who made
  the run (NULL for runs made before);
- ``note``, ``note_user`` and ``note_updated_at`` on ``dag_run`` and ``task_instance``.

Every change adds: nothing existing is rewritten.

Revision ID: 0016_event_log
Revises: 0014_fernet
Create Date: 2026-12-04 19:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_event_log"
down_revision: str | Sequence[str] | None = "0015_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


_NOTE_NAMES = ("note", "note_user", "note_updated_at")


def _note_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("note_user", sa.String(length=250), nullable=True),
        sa.Column("note_updated_at", sa.DateTime(timezone=True), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "event_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("dttm", sa.DateTime(timezone=True), nullable=False),
        sa.Column("event", sa.String(length=60), nullable=False),
        sa.Column("owner", sa.String(length=500), nullable=True),
        sa.Column("origin", sa.String(length=10), nullable=False),
        sa.Column("client", sa.String(length=255), nullable=True),
        sa.Column("dag_id", sa.String(length=250), nullable=True),
        sa.Column("task_id", sa.String(length=250), nullable=True),
        sa.Column("run_id", sa.String(length=250), nullable=True),
        sa.Column("map_index", sa.Integer(), nullable=True),
        sa.Column("try_number", sa.Integer(), nullable=True),
        sa.Column("logical_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("extra", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event_log")),
    )
    op.create_index("ix_event_log_dttm", "event_log", ["dttm"])
    op.create_index("ix_event_log_dag_id", "event_log", ["dag_id", "id"])
    op.create_index("ix_event_log_event", "event_log", ["event", "id"])
    op.create_table(
        "task_instance_history",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("run_id", sa.String(length=250), nullable=False),
        sa.Column("task_id", sa.String(length=250), nullable=False),
        sa.Column("map_index", sa.Integer(), nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=True),
        sa.Column("max_tries", sa.Integer(), nullable=False),
        sa.Column("queue", sa.String(length=250), nullable=False),
        sa.Column("pool", sa.String(length=250), nullable=False),
        sa.Column("pool_slots", sa.Integer(), nullable=False),
        sa.Column("priority_weight", sa.Integer(), nullable=False),
        sa.Column("hostname", sa.String(length=1000), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("start_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_instance_history")),
        sa.UniqueConstraint(
            "dag_id",
            "run_id",
            "task_id",
            "map_index",
            "try_number",
            name=op.f("uq_task_instance_history_dag_id_run_id_task_id_map_index_try_number"),
        ),
    )
    with op.batch_alter_table("dag_run") as batch:
        batch.add_column(sa.Column("triggered_by", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("triggering_user_name", sa.String(length=250), nullable=True))
        for column in _note_columns():
            batch.add_column(column)
    with op.batch_alter_table("task_instance") as batch:
        for column in _note_columns():
            batch.add_column(column)


def downgrade() -> None:
    with op.batch_alter_table("task_instance") as batch:
        for name in _NOTE_NAMES:
            batch.drop_column(name)
    with op.batch_alter_table("dag_run") as batch:
        for name in ("triggered_by", "triggering_user_name", *_NOTE_NAMES):
            batch.drop_column(name)
    op.drop_table("task_instance_history")
    op.drop_table("event_log")
