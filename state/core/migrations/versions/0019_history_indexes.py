"""Indexes that keep history from slowing anything down (issue 30, ``bench/history.py``).

- ``dag_run (dag_id, id)``: a DAG's newest runs (the grid, the DAG list's last runs) read from
  here, not sorted out of every run of the DAG (128 ms at 1,000 runs per DAG without it).
- ``dag_run (end_date)``: ``db clean`` and the retention find the runs ended before a time
  without scanning the rows already deleted.
- ``task_instance (map_index, task_id, id)``: the API's list across every DAG
  (``/dags/~/dagRuns/~/taskInstances``) reads its page from here, not a sort of every row.

Revision ID: 0019_history_indexes
Revises: 0014_fernet
Create Date: 2026-12-04 19:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0019_history_indexes"
down_revision: str | Sequence[str] | None = "0018_metrics"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_dag_run_dag_id_id", "dag_run", ["dag_id", "id"])
    op.create_index("ix_dag_run_end_date", "dag_run", ["end_date"])
    op.create_index(
        "ix_task_instance_all_listing", "task_instance", ["map_index", "task_id", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_task_instance_all_listing", table_name="task_instance")
    op.drop_index("ix_dag_run_end_date", table_name="dag_run")
    op.drop_index("ix_dag_run_dag_id_id", table_name="dag_run")
