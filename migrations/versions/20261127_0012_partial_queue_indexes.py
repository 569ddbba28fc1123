"""Work-queue indexes hold only the dirty rows: ``(id) WHERE <flag> IS true`` instead of ``(<flag>, id)``.

Why: the claim query and the runner's idle probe ask for a dirty row (an EXISTS, or the first ids in order).
With the full index, statistics taken while a burst was queued made Postgres expect thousands of dirty rows
and choose a sequential scan that stops at the first match; at rest there is none, so every probe read the
whole table (10,000 bindings: the Works probe 76 ms and 40,000 buffers per work-sync tick, the bindings
probe 31 ms per scheduler tick). A partial index is as small as the queue and matches the query's own
condition (``IS true``; ``IS 1`` on SQLite).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 16:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

QUEUES = (
    ('clusters', 'requeue_bindings'),
    ('resource_templates', 'needs_detection'),
    ('propagation_policies', 'needs_detection'),
    ('cluster_propagation_policies', 'needs_detection'),
    ('resource_bindings', 'needs_scheduling'),
    ('works', 'needs_sync'),
)


def upgrade() -> None:
    for table, flag in QUEUES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f'ix_{table}_{flag}_id')
            batch_op.create_index(
                f'ix_{table}_{flag}_queued',
                ['id'],
                unique=False,
                postgresql_where=sa.text(f'{flag} IS true'),
                sqlite_where=sa.text(f'{flag} IS 1'),
            )


def downgrade() -> None:
    for table, flag in reversed(QUEUES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f'ix_{table}_{flag}_queued')
            batch_op.create_index(f'ix_{table}_{flag}_id', [flag, 'id'], unique=False)
