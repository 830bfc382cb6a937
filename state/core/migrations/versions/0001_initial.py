"""Initial schema: every table of state.core.models.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 19:41:37.607361
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from alembic import op

revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('connection',
    sa.Column('conn_id', sa.String(length=250), nullable=False),
    sa.Column('conn_type', sa.String(length=500), nullable=False),
    sa.Column('host', sa.String(length=500), nullable=True),
    sa.Column('login', sa.String(length=500), nullable=True),
    sa.Column('password', sa.Text(), nullable=True),
    sa.Column('schema', sa.String(length=500), nullable=True),
    sa.Column('port', sa.Integer(), nullable=True),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('conn_id', name=op.f('pk_connection'))
    )
    op.create_table('dag',
    sa.Column('dag_id', sa.String(length=250), nullable=False),
    sa.Column('fileloc', sa.Text(), nullable=False),
    sa.Column('structure', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=False),
    sa.Column('version_hash', sa.String(length=64), nullable=False),
    sa.Column('is_paused', sa.Boolean(), nullable=False),
    sa.Column('is_active', sa.Boolean(), nullable=False),
    sa.Column('last_parsed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('next_dagrun_after', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('dag_id', name=op.f('pk_dag'))
    )
    op.create_table('dag_import_error',
    sa.Column('fileloc', sa.String(length=1000), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('traceback', sa.Text(), nullable=False),
    sa.Column('timestamp', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('fileloc', name=op.f('pk_dag_import_error'))
    )
    op.create_table('dag_run',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dag_id', sa.String(length=250), nullable=False),
    sa.Column('run_id', sa.String(length=250), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('run_type', sa.String(length=20), nullable=False),
    sa.Column('conf', sa.JSON(), nullable=False),
    sa.Column('version_hash', sa.String(length=64), nullable=True),
    sa.Column('logical_date', sa.DateTime(timezone=True), nullable=True),
    sa.Column('data_interval_start', sa.DateTime(timezone=True), nullable=True),
    sa.Column('data_interval_end', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('start_date', sa.DateTime(timezone=True), nullable=True),
    sa.Column('end_date', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dag_run')),
    sa.UniqueConstraint('dag_id', 'run_id', name=op.f('uq_dag_run_dag_id_run_id'))
    )
    op.create_index('ix_dag_run_state', 'dag_run', ['state'], unique=False)
    op.create_table('slot_pool',
    sa.Column('name', sa.String(length=250), nullable=False),
    sa.Column('slots', sa.Integer(), nullable=False),
    sa.Column('occupied', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_slot_pool'))
    )
    op.create_table('task_instance',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dag_id', sa.String(length=250), nullable=False),
    sa.Column('run_id', sa.String(length=250), nullable=False),
    sa.Column('task_id', sa.String(length=250), nullable=False),
    sa.Column('map_index', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('try_number', sa.Integer(), nullable=False),
    sa.Column('max_tries', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('queue', sa.String(length=250), nullable=False),
    sa.Column('pool', sa.String(length=250), nullable=False),
    sa.Column('hostname', sa.String(length=1000), nullable=True),
    sa.Column('pid', sa.Integer(), nullable=True),
    sa.Column('start_date', sa.DateTime(timezone=True), nullable=True),
    sa.Column('end_date', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_heartbeat', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_retry_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('queued_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('queued_resends', sa.Integer(), nullable=False),
    sa.Column('deliveries', sa.Integer(), nullable=False),
    sa.Column('fence_token', sa.String(length=64), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('items_total', sa.Integer(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_task_instance')),
    sa.UniqueConstraint('dag_id', 'run_id', 'task_id', 'map_index', name=op.f('uq_task_instance_dag_id_run_id_task_id_map_index'))
    )
    op.create_index('ix_task_instance_state', 'task_instance', ['state'], unique=False)
    op.create_table('task_state',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dag_id', sa.String(length=250), nullable=False),
    sa.Column('run_id', sa.String(length=250), nullable=False),
    sa.Column('task_id', sa.String(length=250), nullable=False),
    sa.Column('map_index', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=512), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_task_state')),
    sa.UniqueConstraint('dag_id', 'run_id', 'task_id', 'map_index', 'key', name=op.f('uq_task_state_dag_id_run_id_task_id_map_index_key'))
    )
    op.create_table('variable',
    sa.Column('key', sa.String(length=250), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('is_secret', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_variable'))
    )
    op.create_table('xcom',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dag_id', sa.String(length=250), nullable=False),
    sa.Column('run_id', sa.String(length=250), nullable=False),
    sa.Column('task_id', sa.String(length=250), nullable=False),
    sa.Column('map_index', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=512), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_xcom')),
    sa.UniqueConstraint('dag_id', 'run_id', 'task_id', 'map_index', 'key', name=op.f('uq_xcom_dag_id_run_id_task_id_map_index_key'))
    )


def downgrade() -> None:
    op.drop_table('xcom')
    op.drop_table('variable')
    op.drop_table('task_state')
    op.drop_index('ix_task_instance_state', table_name='task_instance')
    op.drop_table('task_instance')
    op.drop_table('slot_pool')
    op.drop_index('ix_dag_run_state', table_name='dag_run')
    op.drop_table('dag_run')
    op.drop_table('dag_import_error')
    op.drop_table('dag')
    op.drop_table('connection')
