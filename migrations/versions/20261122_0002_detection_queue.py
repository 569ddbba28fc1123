"""Detection queue: templates and policies are queued for the detector; bindings name their policy.

Existing rows start queued (needs_detection true), so the detector looks at everything once.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 04:13:04.912961
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


QUEUED_TABLES = ('cluster_propagation_policies', 'propagation_policies', 'resource_templates')


def upgrade() -> None:
    with op.batch_alter_table('cluster_propagation_policies', schema=None) as batch_op:
        batch_op.add_column(sa.Column('needs_detection', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('claimed_by', sa.String(length=253), nullable=True))
        batch_op.add_column(sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('dirty_seq', sa.Integer(), nullable=False, server_default='0'))
        batch_op.create_index('ix_cluster_propagation_policies_needs_detection_id', ['needs_detection', 'id'], unique=False)

    with op.batch_alter_table('propagation_policies', schema=None) as batch_op:
        batch_op.add_column(sa.Column('needs_detection', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('claimed_by', sa.String(length=253), nullable=True))
        batch_op.add_column(sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('dirty_seq', sa.Integer(), nullable=False, server_default='0'))
        batch_op.create_index('ix_propagation_policies_needs_detection_id', ['needs_detection', 'id'], unique=False)

    with op.batch_alter_table('resource_bindings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('policy_key', sa.String(length=600), nullable=True))
        batch_op.create_index(batch_op.f('ix_resource_bindings_policy_key'), ['policy_key'], unique=False)

    with op.batch_alter_table('resource_templates', schema=None) as batch_op:
        batch_op.add_column(sa.Column('needs_detection', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('claimed_by', sa.String(length=253), nullable=True))
        batch_op.add_column(sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('dirty_seq', sa.Integer(), nullable=False, server_default='0'))
        batch_op.create_index('ix_resource_templates_needs_detection_id', ['needs_detection', 'id'], unique=False)

    # The defaults only fill existing rows; the application sets both columns on every insert.
    for table in QUEUED_TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column('needs_detection', server_default=None)
            batch_op.alter_column('dirty_seq', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('resource_templates', schema=None) as batch_op:
        batch_op.drop_index('ix_resource_templates_needs_detection_id')
        batch_op.drop_column('dirty_seq')
        batch_op.drop_column('next_attempt_at')
        batch_op.drop_column('claimed_until')
        batch_op.drop_column('claimed_by')
        batch_op.drop_column('needs_detection')

    with op.batch_alter_table('resource_bindings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_resource_bindings_policy_key'))
        batch_op.drop_column('policy_key')

    with op.batch_alter_table('propagation_policies', schema=None) as batch_op:
        batch_op.drop_index('ix_propagation_policies_needs_detection_id')
        batch_op.drop_column('dirty_seq')
        batch_op.drop_column('next_attempt_at')
        batch_op.drop_column('claimed_until')
        batch_op.drop_column('claimed_by')
        batch_op.drop_column('needs_detection')

    with op.batch_alter_table('cluster_propagation_policies', schema=None) as batch_op:
        batch_op.drop_index('ix_cluster_propagation_policies_needs_detection_id')
        batch_op.drop_column('dirty_seq')
        batch_op.drop_column('next_attempt_at')
        batch_op.drop_column('claimed_until')
        batch_op.drop_column('claimed_by')
        batch_op.drop_column('needs_detection')

