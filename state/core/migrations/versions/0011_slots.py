"""Task instances carry their weight and pool slots; tries waiting for a slot are read by weight.

``priority_weight`` (the task's total weight, tradewind/priority.py) orders the tries waiting
for a slot, higher first; ``pool_slots`` is what one try takes of its pool. The waiting index of
0003 gains the weight, so an ended try's taker is still the index's first row, and a second
partial index finds another run's try that outranks it in the same pool.

Revision ID: 0011_slots
Revises: 0010_mailctx
Create Date: 2026-12-03 17:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_slots"
down_revision: str | Sequence[str] | None = "0010_mailctx"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WAITING = sa.text("state = 'scheduled'")


def upgrade() -> None:
    with op.batch_alter_table("task_instance") as batch:
        batch.add_column(sa.Column("priority_weight", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("pool_slots", sa.Integer(), nullable=False, server_default="1"))
    op.drop_index("ix_task_instance_waiting", table_name="task_instance")
    op.create_index(
        "ix_task_instance_waiting",
        "task_instance",
        ["dag_id", "run_id", "pool", "priority_weight", "id"],
        postgresql_where=_WAITING,
        sqlite_where=_WAITING,
    )
    op.create_index(
        "ix_task_instance_outranking",
        "task_instance",
        ["pool", "priority_weight"],
        postgresql_where=_WAITING,
        sqlite_where=_WAITING,
    )


def downgrade() -> None:
    op.drop_index("ix_task_instance_outranking", table_name="task_instance")
    op.drop_index("ix_task_instance_waiting", table_name="task_instance")
    op.create_index(
        "ix_task_instance_waiting",
        "task_instance",
        ["dag_id", "run_id", "pool", "id"],
        postgresql_where=_WAITING,
        sqlite_where=_WAITING,
    )
    with op.batch_alter_table("task_instance") as batch:
        batch.drop_column("pool_slots")
        batch.drop_column("priority_weight")
