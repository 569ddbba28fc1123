"""Claim back-off: ``failures`` counts a queued row's consecutive failed attempts (claims.fail).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 17:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (
    'clusters',
    'resource_templates',
    'propagation_policies',
    'cluster_propagation_policies',
    'resource_bindings',
    'works',
)


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('failures', sa.Integer(), server_default='0', nullable=False))


def downgrade() -> None:
    for table in reversed(TABLES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column('failures')
