"""The data interval of a DAG's next scheduled run, for a DAG scheduled by a timetable object.

A timetable may answer differently once its next run is due (an events timetable without
catchup skips events already past; a DAG folder's own timetable may read today's date), so the
run it asked for is kept beside ``next_dagrun_after`` and created as asked.

Revision ID: 0009_timetables
Revises: 0008
Create Date: 2026-12-03 17:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_timetables"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("next_dagrun_data_interval_start", "next_dagrun_data_interval_end")


def upgrade() -> None:
    with op.batch_alter_table("dag", schema=None) as batch_op:
        for name in _COLUMNS:
            batch_op.add_column(sa.Column(name, sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dag", schema=None) as batch_op:
        for name in reversed(_COLUMNS):
            batch_op.drop_column(name)
