"""The change log keeps each event's object as ``json`` text on Postgres, compressed with lz4 where the
server has it (0009 did the same for decision explanations).

Why: every write of every object logs its whole object, and the log is only ever read whole (a watch, a
list at a revision): ``jsonb`` parsed and re-encoded each one, ~1.5x the cost of storing the text.
SQLite already stores JSON as text: nothing to do there.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 00:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = 'change_log'
COLUMN = 'object'
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
        existing_nullable=False,
        postgresql_using=f'"{COLUMN}"::json',
    )
    if bind.execute(sa.text(HAS_LZ4)).scalar():
        op.execute(f'ALTER TABLE {TABLE} ALTER COLUMN "{COLUMN}" SET COMPRESSION lz4')


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != 'postgresql':
        return
    if bind.execute(sa.text(HAS_LZ4)).scalar():
        op.execute(f'ALTER TABLE {TABLE} ALTER COLUMN "{COLUMN}" SET COMPRESSION default')
    op.alter_column(
        TABLE,
        COLUMN,
        type_=postgresql.JSONB(astext_type=sa.Text()),
        existing_type=sa.JSON(),
        existing_nullable=False,
        postgresql_using=f'"{COLUMN}"::jsonb',
    )
