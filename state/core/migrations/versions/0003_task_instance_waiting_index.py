"""The tries waiting for a slot, indexed per run and pool: an ended try hands its slot over.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 08:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WAITING = sa.text("state = 'scheduled'")


def upgrade() -> None:
    op.create_index(
        "ix_task_instance_waiting",
        "task_instance",
        ["dag_id", "run_id", "pool", "id"],
        postgresql_where=_WAITING,
        sqlite_where=_WAITING,
    )


def downgrade() -> None:
    op.drop_index("ix_task_instance_waiting", table_name="task_instance")
