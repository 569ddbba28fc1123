"""Global resourceVersion: one revision sequence across all objects, and the change log watch reads.

The sequence (Postgres) or counter row (SQLite) starts after the largest per-object resource_version
found, so every optimistic check a client still holds keeps working and every later write gets a value
no object had. resource_version becomes 64-bit on Postgres (SQLite's INTEGER already is).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Every table holding API objects (the ObjectMixin tables at this revision), written out: a migration
# must mean the same thing forever.
OBJECT_TABLES = (
    'clusters',
    'resource_templates',
    'propagation_policies',
    'cluster_propagation_policies',
    'workload_policies',
    'workload_rebalancers',
    'resource_bindings',
    'works',
    'cluster_taint_policies',
)
SEQUENCE = 'resource_version_seq'
REVISION = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('change_log',
    sa.Column('revision', REVISION, autoincrement=False, nullable=False),
    sa.Column('event', sa.String(length=16), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('object', JSON, nullable=False),
    sa.Column('previous_labels', JSON, nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('revision', name=op.f('pk_change_log'))
    )
    with op.batch_alter_table('change_log', schema=None) as batch_op:
        batch_op.create_index('ix_change_log_created_at', ['created_at'], unique=False)
    op.create_table('revision_counter',
    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('value', REVISION, nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_revision_counter'))
    )
    last = _largest_resource_version()
    if op.get_bind().dialect.name == 'postgresql':
        for table in OBJECT_TABLES:
            op.alter_column(table, 'resource_version', type_=sa.BigInteger(), existing_nullable=False)
        op.execute(sa.schema.CreateSequence(sa.Sequence(SEQUENCE, start=last + 1)))
    else:
        op.execute(sa.text('INSERT INTO revision_counter (id, value) VALUES (1, :last)').bindparams(last=last))


def _largest_resource_version() -> int:
    union = ' UNION ALL '.join(f'SELECT MAX(resource_version) AS v FROM {table}' for table in OBJECT_TABLES)
    found = op.get_bind().execute(sa.text(f'SELECT MAX(v) FROM ({union}) AS per_table')).scalar()
    return int(found or 0)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(sa.schema.DropSequence(sa.Sequence(SEQUENCE)))
        # Fails if a revision outgrew 32 bits: the per-object counters cannot hold it.
        for table in OBJECT_TABLES:
            op.alter_column(table, 'resource_version', type_=sa.Integer(), existing_nullable=False)
    op.drop_table('revision_counter')
    with op.batch_alter_table('change_log', schema=None) as batch_op:
        batch_op.drop_index('ix_change_log_created_at')
    op.drop_table('change_log')
