"""A DAG's task instances indexed in the API list's default order (map index, task, id).

The list across runs (``/dags/{dag_id}/dagRuns/~/taskInstances``) reads its page of 100 from
this index instead of sorting every task instance of the DAG.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 13:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_task_instance_listing", "task_instance", ["dag_id", "map_index", "task_id", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_task_instance_listing", table_name="task_instance")
