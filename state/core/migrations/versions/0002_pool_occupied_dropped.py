"""A pool's use is counted, not stored: drop ``slot_pool.occupied``, which nothing wrote.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 02:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A batch operation: SQLite drops a column by copying the table.
    with op.batch_alter_table("slot_pool") as batch:
        batch.drop_column("occupied")


def downgrade() -> None:
    with op.batch_alter_table("slot_pool") as batch:
        batch.add_column(sa.Column("occupied", sa.Integer(), nullable=False, server_default="0"))
