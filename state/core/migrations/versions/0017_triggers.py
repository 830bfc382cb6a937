"""The triggerer's table and a deferred try's resume point (DESIGN.md §12).

``trigger`` holds the serialized triggers of deferred tries and of asset watchers, with the
triggerer that claimed each (its fencing token and heartbeat), its timeout and the event that
fired it. ``task_instance.next_method`` / ``next_kwargs`` say where a deferred try resumes.
Additive: no existing row changes.

Revision ID: 0017_triggers
Revises: 0014_fernet
Create Date: 2026-12-04 19:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_triggers"
down_revision: str | Sequence[str] | None = "0016_event_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "trigger",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("classpath", sa.String(1000), nullable=False),
        sa.Column("kwargs", sa.JSON(), nullable=False),
        sa.Column("ti_id", sa.Integer(), nullable=True),
        sa.Column("try_number", sa.Integer(), nullable=True),
        sa.Column("watcher", sa.String(1600), nullable=True),
        sa.Column("triggerer_id", sa.String(250), nullable=True),
        sa.Column("claim_token", sa.String(64), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("timeout_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("event", sa.JSON(), nullable=True),
        sa.Column("fired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trigger")),
        sa.UniqueConstraint("watcher", name=op.f("uq_trigger_watcher")),
    )
    op.create_index("ix_trigger_ti_id", "trigger", ["ti_id"])
    op.create_index(
        "ix_trigger_waiting",
        "trigger",
        ["id"],
        postgresql_where=sa.text("fired_at IS NULL"),
        sqlite_where=sa.text("fired_at IS NULL"),
    )
    with op.batch_alter_table("task_instance") as batch:
        batch.add_column(sa.Column("next_method", sa.String(1000), nullable=True))
        batch.add_column(sa.Column("next_kwargs", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_instance") as batch:
        batch.drop_column("next_kwargs")
        batch.drop_column("next_method")
    op.drop_index("ix_trigger_waiting", table_name="trigger")
    op.drop_index("ix_trigger_ti_id", table_name="trigger")
    op.drop_table("trigger")
