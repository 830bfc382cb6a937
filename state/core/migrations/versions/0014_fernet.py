"""Connection passwords, extras and variables may be stored encrypted: a flag beside each.

``connection.is_encrypted`` (the password), ``connection.is_extra_encrypted`` and
``variable.is_encrypted`` say whether the column beside holds Fernet text (state/core/cipher.py).
Existing rows are left as they are, in plaintext and flagged so: they stay readable, and
``tradewind rotate-fernet-key`` encrypts them once a key is set. No value is rewritten here, so
the migration needs no key and cannot lose one.

Revision ID: 0014_fernet
Revises: 0013_descriptions
Create Date: 2026-12-04 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_fernet"
down_revision: str | Sequence[str] | None = "0013_descriptions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FLAGS = {"connection": ("is_encrypted", "is_extra_encrypted"), "variable": ("is_encrypted",)}


def upgrade() -> None:
    for table, flags in _FLAGS.items():
        with op.batch_alter_table(table) as batch:
            for flag in flags:
                batch.add_column(
                    sa.Column(flag, sa.Boolean(), nullable=False, server_default=sa.false())
                )


def downgrade() -> None:
    # Encrypted values would be unreadable without their flags: refuse rather than lose them.
    bind = op.get_bind()
    for table, flags in _FLAGS.items():
        for flag in flags:
            if bind.execute(sa.text(f"SELECT count(*) FROM {table} WHERE {flag}")).scalar():
                raise RuntimeError(
                    f"{table} rows are encrypted: decrypt them before downgrading below 0014_fernet"
                )
    for table, flags in _FLAGS.items():
        with op.batch_alter_table(table) as batch:
            for flag in flags:
                batch.drop_column(flag)
