"""Variables, connections and pools keep a description, as Airflow's do.

The REST API took ``description`` on each and dropped it; it is now stored and returned.

Revision ID: 0013_descriptions
Revises: 0012_tokens
Create Date: 2026-12-04 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_descriptions"
down_revision: str | Sequence[str] | None = "0012_tokens"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("variable", "connection", "slot_pool")


def upgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("description", sa.Text(), nullable=True))


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("description")
