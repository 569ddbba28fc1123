"""Bindings and templates get ``content_updated_at``: stamped by every write but a status-only one.

Why: execution and binding status follow what a binding (and its template) say, not their status; with
``updated_at`` as their change feed, every status write (binding status aggregates every Work status change
into the binding and the template) showed the rows to them again. The ``updated_at`` indexes go: nothing
else reads by them, and without an index on the column a status write changes, Postgres can write the new
row version in place (a HOT update).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 09:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ('resource_bindings', 'resource_templates')


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('content_updated_at', sa.DateTime(timezone=True), nullable=True))
        op.execute(f'UPDATE {table} SET content_updated_at = updated_at')
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column('content_updated_at', existing_type=sa.DateTime(timezone=True), nullable=False)
            batch_op.drop_index(f'ix_{table}_updated_at')
            batch_op.create_index(f'ix_{table}_content_updated_at', ['content_updated_at'], unique=False)


def downgrade() -> None:
    for table in reversed(TABLES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f'ix_{table}_content_updated_at')
            batch_op.create_index(f'ix_{table}_updated_at', ['updated_at'], unique=False)
            batch_op.drop_column('content_updated_at')
