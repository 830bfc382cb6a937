"""The ``metric`` table: what the fleet's processes report for ``/metrics`` (docs/metrics.md).

Counters' and histograms' totals, one row per series (and bucket), and gauges, one row per
process; additive: nothing else changes.

Revision ID: 0018_metrics
Revises: 0014_fernet
Create Date: 2026-12-04 19:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_metrics"
down_revision: str | Sequence[str] | None = "0017_triggers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "metric",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("labels", sa.String(length=250), nullable=False),
        sa.Column("bucket", sa.String(length=20), nullable=False),
        sa.Column("process", sa.String(length=250), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", "labels", "bucket", "process", name=op.f("pk_metric")),
    )


def downgrade() -> None:
    op.drop_table("metric")
