"""A mapped task instance's name: its ``map_index_template`` as the last try rendered it.

Revision ID: 0010_mailctx
Revises: 0009_timetables
Create Date: 2026-12-03 17:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_mailctx"
down_revision: str | Sequence[str] | None = "0009_timetables"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("task_instance") as batch:
        batch.add_column(sa.Column("rendered_map_index", sa.String(250), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_instance") as batch:
        batch.drop_column("rendered_map_index")
