"""Scheduling decisions keep their explanation as ``json`` text on Postgres, compressed with lz4 where the
server has it.

Why: a decision's per-cluster explanation is tens of KB at 100 clusters and is never queried by content;
``jsonb`` parses and re-encodes every one (the most expensive part of a scheduler batch's write), ``json``
stores the text as given. lz4 compresses the TOASTed values several times faster than the default pglz.
SQLite already stores JSON as text: nothing to do there.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 00:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = 'scheduling_decisions'
COLUMN = 'explanation'
# Whether this server was built with lz4 (Postgres 14+ lists it among default_toast_compression's values).
HAS_LZ4 = (
    "SELECT EXISTS (SELECT FROM pg_settings "
    "WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals))"
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != 'postgresql':
        return
    op.alter_column(
        TABLE,
        COLUMN,
        type_=sa.JSON(),
        existing_type=postgresql.JSONB(astext_type=sa.Text()),
        postgresql_using=f'{COLUMN}::json',
    )
    if bind.execute(sa.text(HAS_LZ4)).scalar():
        op.execute(f'ALTER TABLE {TABLE} ALTER COLUMN {COLUMN} SET COMPRESSION lz4')


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != 'postgresql':
        return
    if bind.execute(sa.text(HAS_LZ4)).scalar():
        op.execute(f'ALTER TABLE {TABLE} ALTER COLUMN {COLUMN} SET COMPRESSION default')
    op.alter_column(
        TABLE,
        COLUMN,
        type_=postgresql.JSONB(astext_type=sa.Text()),
        existing_type=sa.JSON(),
        postgresql_using=f'{COLUMN}::jsonb',
    )
