"""What the browses of the UI filter and sort by: a DAG's tags, owners and display name in
columns of their own, and the indexes the Runs and Task Instances browses read.

``dag_tag`` (as Airflow's), ``dag.display_name`` and ``dag.owners`` are copied out of each DAG's
structure when it is stored; the DAGs already stored get them here, from their structures, so
the DAG list's filters hold before the next parse. Everything is added: nothing is rewritten.

Revision ID: 0021_browse_indexes
Revises: 0014_fernet
Create Date: 2026-12-04 19:00:00
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0021_browse_indexes"
down_revision: str | Sequence[str] | None = "0019_history_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXES = {
    # ix_dag_run_dag_id_id (a DAG's newest runs) comes with 0019_history_indexes.
    "ix_dag_run_start_date": ("dag_run", ["start_date"]),
    "ix_dag_run_logical_date": ("dag_run", ["logical_date"]),
    "ix_task_instance_dag_state": ("task_instance", ["dag_id", "state", "id"]),
    "ix_task_instance_start_date": ("task_instance", ["start_date"]),
}


def upgrade() -> None:
    with op.batch_alter_table("dag") as batch:
        batch.add_column(sa.Column("display_name", sa.String(250), nullable=True))
        batch.add_column(sa.Column("owners", sa.String(2000), nullable=True))
    op.create_table(
        "dag_tag",
        sa.Column("dag_id", sa.String(250), primary_key=True),
        sa.Column("name", sa.String(100), primary_key=True),
    )
    op.create_index("ix_dag_tag_name", "dag_tag", ["name"])
    for name, (table, columns) in _INDEXES.items():
        op.create_index(name, table, columns)
    if not op.get_context().as_sql:  # an SQL script has no rows to read: the next sync fills them
        _fill_facets()


def _fill_facets() -> None:
    """The stored DAGs' tags, owners and display names, from their structures."""
    bind = op.get_bind()
    dag = sa.table(
        "dag",
        sa.column("dag_id", sa.String),
        sa.column("structure", sa.JSON),
        sa.column("display_name", sa.String),
        sa.column("owners", sa.String),
    )
    tag = sa.table("dag_tag", sa.column("dag_id", sa.String), sa.column("name", sa.String))
    for dag_id, raw in bind.execute(sa.select(dag.c.dag_id, dag.c.structure)).all():
        structure: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else (raw or {})
        tasks = structure.get("tasks", {}).values()
        owners = sorted({str(task.get("owner", "airflow")) for task in tasks})
        values = {"display_name": structure.get("display_name"), "owners": _joined(owners)}
        bind.execute(sa.update(dag).where(dag.c.dag_id == dag_id).values(**values))
        tags = sorted({str(name)[:100] for name in structure.get("tags", [])})
        if tags:
            bind.execute(sa.insert(tag), [{"dag_id": dag_id, "name": name} for name in tags])


def _joined(owners: list[str]) -> str | None:
    return f",{','.join(owners)}," if owners else None


def downgrade() -> None:
    for name, (table, _columns) in _INDEXES.items():
        op.drop_index(name, table_name=table)
    op.drop_index("ix_dag_tag_name", table_name="dag_tag")
    op.drop_table("dag_tag")
    with op.batch_alter_table("dag") as batch:
        batch.drop_column("owners")
        batch.drop_column("display_name")
