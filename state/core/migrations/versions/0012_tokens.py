"""Users carry a token version; their ids are never reused.

Tokens and session cookies name the user's id and ``token_version``; raising the version (a
sign-out, a new password, a new role) ends every one of them. On SQLite the table is rebuilt
with AUTOINCREMENT: without it a new user could take the id of the user deleted last, and a
token of the deleted user would name the new one. PostgreSQL's sequence never hands an id out
twice.

Revision ID: 0012_tokens
Revises: 0011_slots
Create Date: 2026-12-04 15:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_tokens"
down_revision: str | Sequence[str] | None = "0011_slots"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # SQLite's ADD COLUMN keeps the table as it was: only a rebuild gives it AUTOINCREMENT.
    sqlite = op.get_bind().dialect.name == "sqlite"
    with op.batch_alter_table(
        "api_user",
        recreate="always" if sqlite else "auto",
        table_kwargs={"sqlite_autoincrement": True},
    ) as batch:
        batch.add_column(
            sa.Column("token_version", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("api_user") as batch:
        batch.drop_column("token_version")
