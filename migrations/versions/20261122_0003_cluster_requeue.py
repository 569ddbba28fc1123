"""Cluster changes re-queue bindings: clusters get a scheduler queue and a scheduling fingerprint;
bindings say whether a cluster change may affect them.

Existing clusters start queued and existing bindings start sensitive, so the scheduler looks at
everything once after the upgrade.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 06:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('clusters', schema=None) as batch_op:
        batch_op.add_column(sa.Column('requeue_bindings', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('scheduling_hash', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('claimed_by', sa.String(length=253), nullable=True))
        batch_op.add_column(sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('dirty_seq', sa.Integer(), nullable=False, server_default='0'))
        batch_op.create_index('ix_clusters_requeue_bindings_id', ['requeue_bindings', 'id'], unique=False)

    with op.batch_alter_table('resource_bindings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cluster_sensitive', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.create_index(batch_op.f('ix_resource_bindings_cluster_sensitive'), ['cluster_sensitive'], unique=False)

    # The defaults only fill existing rows; the application sets these columns on every insert.
    with op.batch_alter_table('clusters', schema=None) as batch_op:
        batch_op.alter_column('requeue_bindings', server_default=None)
        batch_op.alter_column('dirty_seq', server_default=None)
    with op.batch_alter_table('resource_bindings', schema=None) as batch_op:
        batch_op.alter_column('cluster_sensitive', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('resource_bindings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_resource_bindings_cluster_sensitive'))
        batch_op.drop_column('cluster_sensitive')

    with op.batch_alter_table('clusters', schema=None) as batch_op:
        batch_op.drop_index('ix_clusters_requeue_bindings_id')
        batch_op.drop_column('dirty_seq')
        batch_op.drop_column('next_attempt_at')
        batch_op.drop_column('claimed_until')
        batch_op.drop_column('claimed_by')
        batch_op.drop_column('scheduling_hash')
        batch_op.drop_column('requeue_bindings')
