"""The questions human-in-the-loop tasks ask, and their answers (docs/hitl.md).

``hitl_detail``: one row per task instance waiting in ``awaiting_input`` (or answered), written
with the end of the try that asked. Additive: no existing row changes.

Revision ID: 0022_hitl
Revises: 0021_browse_indexes
Create Date: 2026-12-04 22:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_hitl"
down_revision: str | Sequence[str] | None = "0021_browse_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "hitl_detail",
        sa.Column("ti_id", sa.Integer(), nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("multiple", sa.Boolean(), nullable=False),
        sa.Column("defaults", sa.JSON(), nullable=True),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("assignees", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("timeout_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("responded_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("responded_by", sa.JSON(), nullable=True),
        sa.Column("chosen_options", sa.JSON(), nullable=True),
        sa.Column("params_input", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("ti_id", name=op.f("pk_hitl_detail")),
    )
    op.create_index(
        "ix_hitl_detail_waiting",
        "hitl_detail",
        ["timeout_at"],
        postgresql_where=sa.text("responded_at IS NULL"),
        sqlite_where=sa.text("responded_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_hitl_detail_waiting", table_name="hitl_detail")
    op.drop_table("hitl_detail")
