"""The large JSON columns written on every pass are compressed with lz4 on Postgres, where the server has it.

Why: Postgres compresses a value that would make its row larger than ~2 KB (TOAST), by default with pglz.
Every scheduler pass writes an ~18 KB explanation per decision record (100 clusters), a change-log object
per write and a binding's or Work's spec and status: pglz spent the database's CPU (a second core that the
controllers' process shares on a small machine) at ~100-200 MB/s. lz4 compresses several times faster at a
similar ratio for JSON. Only the compression of values written from now on changes: nothing is rewritten,
and a value compressed either way reads the same. Servers built without lz4 (or before Postgres 14, which
has no per-column compression) keep pglz: the migration does nothing there, and nothing on SQLite.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 02:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = (
    ('scheduling_decisions', 'explanation'),
    ('change_log', 'object'),
    ('resource_bindings', 'spec'),
    ('resource_bindings', 'status'),
    ('resource_templates', 'spec'),
    ('resource_templates', 'status'),
    ('works', 'spec'),
    ('works', 'status'),
)

LZ4_AVAILABLE = sa.text(
    "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
)


def _lz4_available() -> bool:
    bind = op.get_bind()
    return bind.dialect.name == 'postgresql' and bool(bind.execute(LZ4_AVAILABLE).scalar())


def upgrade() -> None:
    if _lz4_available():
        for table, column in COLUMNS:
            op.execute(f'ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4')


def downgrade() -> None:
    if _lz4_available():
        for table, column in COLUMNS:
            op.execute(f'ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION default')
