"""``controller_checkpoints``: where each change-feed controller's last committed pass left its feeds.

Why: the execution and binding-status controllers followed their change feeds from memory, so every start
(and every new leader) began with a full pass over every binding, Work and template: at 10,000 bindings
most of a cold start. With the feeds' watermarks and their last full pass in the database, a restart
resumes where the previous leader left off; the full resync keeps its schedule.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 03:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('controller_checkpoints',
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('code_version', sa.String(length=64), nullable=False),
    sa.Column('state', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def downgrade() -> None:
    op.drop_table('controller_checkpoints')
