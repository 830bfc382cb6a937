"""The ``job`` table: each long-running component's registration and latest heartbeat.

Schedulers, workers, triggerers, API servers and DAG processors register one row per process
start and beat on it (state/records/jobs.py); the health endpoint, ``tradewind jobs check`` and
the UI's home read it. A new table only: nothing existing changes.

Revision ID: 0015_jobs
Revises: 0014_fernet
Create Date: 2026-12-04 19:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "0015_jobs"
down_revision: str | Sequence[str] | None = "0014_fernet"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("job_type", sa.String(30), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("hostname", sa.String(500), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("unixname", sa.String(1000), nullable=True),
        sa.Column("name", sa.String(500), nullable=True),
        sa.Column("start_date", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("latest_heartbeat", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job")),
        sqlite_autoincrement=True,  # a deleted row's id is never handed to a new process
    )
    op.create_index("ix_job_type_heartbeat", "job", ["job_type", "latest_heartbeat"])
    op.create_index("ix_job_state_heartbeat", "job", ["state", "latest_heartbeat"])


def downgrade() -> None:
    op.drop_index("ix_job_state_heartbeat", table_name="job")
    op.drop_index("ix_job_type_heartbeat", table_name="job")
    op.drop_table("job")
