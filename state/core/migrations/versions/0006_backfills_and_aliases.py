"""Backfills and the runs each created; asset aliases with ids (the REST API names them by id).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 13:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The aliases known before this revision: those resolved by an event, those a DAG waits on.
_KNOWN_ALIASES = """
INSERT INTO asset_alias (name, "group")
SELECT name, 'asset' FROM (
    SELECT alias_name AS name FROM asset_alias_asset
    UNION
    SELECT substr(reference, 7) AS name FROM dag_asset_reference WHERE reference LIKE 'alias:%'
) AS known
"""


def upgrade() -> None:
    op.create_table(
        "asset_alias",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=1500), nullable=False),
        sa.Column("group", sa.String(length=1500), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_asset_alias")),
        sa.UniqueConstraint("name", name=op.f("uq_asset_alias_name")),
    )
    op.execute(_KNOWN_ALIASES)
    op.create_table(
        "backfill",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("from_date", sa.DateTime(timezone=True), nullable=False),
        sa.Column("to_date", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dag_run_conf", sa.JSON(), nullable=False),
        sa.Column("is_paused", sa.Boolean(), nullable=False),
        sa.Column("max_active_runs", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("cancelled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backfill")),
    )
    with op.batch_alter_table("backfill", schema=None) as batch_op:
        batch_op.create_index("ix_backfill_dag_id", ["dag_id"], unique=False)
    op.create_table(
        "backfill_dag_run",
        sa.Column("dag_run_id", sa.Integer(), nullable=False),
        sa.Column("backfill_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("dag_run_id", name=op.f("pk_backfill_dag_run")),
    )
    with op.batch_alter_table("backfill_dag_run", schema=None) as batch_op:
        batch_op.create_index("ix_backfill_dag_run_backfill_id", ["backfill_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("backfill_dag_run", schema=None) as batch_op:
        batch_op.drop_index("ix_backfill_dag_run_backfill_id")
    op.drop_table("backfill_dag_run")
    with op.batch_alter_table("backfill", schema=None) as batch_op:
        batch_op.drop_index("ix_backfill_dag_id")
    op.drop_table("backfill")
    op.drop_table("asset_alias")
