"""Assets, their events and state stores, the assets aliases resolved to, what DAGs wait on.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:33:19
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "asset",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uri", sa.String(length=1500), nullable=False),
        sa.Column("name", sa.String(length=1500), nullable=False),
        sa.Column("group", sa.String(length=1500), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_asset")),
        sa.UniqueConstraint("uri", name=op.f("uq_asset_uri")),
    )
    op.create_table(
        "asset_alias_asset",
        sa.Column("alias_name", sa.String(length=1500), nullable=False),
        sa.Column("asset_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("alias_name", "asset_id", name=op.f("pk_asset_alias_asset")),
    )
    op.create_table(
        "asset_dag_run_queue",
        sa.Column("target_dag_id", sa.String(length=250), nullable=False),
        sa.Column("asset_id", sa.Integer(), nullable=False),
        sa.Column("last_event_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("target_dag_id", "asset_id", name=op.f("pk_asset_dag_run_queue")),
    )
    op.create_table(
        "asset_event",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("asset_id", sa.Integer(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.Column("source_dag_id", sa.String(length=250), nullable=True),
        sa.Column("source_run_id", sa.String(length=250), nullable=True),
        sa.Column("source_task_id", sa.String(length=250), nullable=True),
        sa.Column("source_map_index", sa.Integer(), nullable=False),
        sa.Column("source_alias", sa.String(length=1500), nullable=True),
        sa.Column("partition_key", sa.String(length=250), nullable=True),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_asset_event")),
    )
    with op.batch_alter_table("asset_event", schema=None) as batch_op:
        batch_op.create_index("ix_asset_event_asset_id", ["asset_id", "id"], unique=False)

    op.create_table(
        "asset_state",
        sa.Column("asset_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("asset_id", "key", name=op.f("pk_asset_state")),
    )
    op.create_table(
        "dag_asset_reference",
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("reference", sa.String(length=1600), nullable=False),
        sa.PrimaryKeyConstraint("dag_id", "reference", name=op.f("pk_dag_asset_reference")),
    )


def downgrade() -> None:
    op.drop_table("dag_asset_reference")
    op.drop_table("asset_state")
    with op.batch_alter_table("asset_event", schema=None) as batch_op:
        batch_op.drop_index("ix_asset_event_asset_id")

    op.drop_table("asset_event")
    op.drop_table("asset_dag_run_queue")
    op.drop_table("asset_alias_asset")
    op.drop_table("asset")
