"""Tokens may expire (``api_tokens.expires_at``); the database remembers a fingerprint of its encryption
key (``key_fingerprints``), so a replica started with another key refuses to start.

Existing tokens keep not expiring (NULL). The fingerprint is recorded by the first start after the upgrade.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 18:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('key_fingerprints',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('purpose', sa.String(length=64), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_key_fingerprints')),
    sa.UniqueConstraint('purpose', name=op.f('uq_key_fingerprints_purpose'))
    )
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_column('expires_at')

    op.drop_table('key_fingerprints')
