"""Change-feed indexes: execution and binding status read the rows written since a watermark.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 05:20:01.674145
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('resource_bindings', schema=None) as batch_op:
        batch_op.create_index('ix_resource_bindings_updated_at', ['updated_at'], unique=False)

    with op.batch_alter_table('resource_templates', schema=None) as batch_op:
        batch_op.create_index('ix_resource_templates_updated_at', ['updated_at'], unique=False)

    with op.batch_alter_table('works', schema=None) as batch_op:
        batch_op.create_index('ix_works_updated_at', ['updated_at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('works', schema=None) as batch_op:
        batch_op.drop_index('ix_works_updated_at')

    with op.batch_alter_table('resource_templates', schema=None) as batch_op:
        batch_op.drop_index('ix_resource_templates_updated_at')

    with op.batch_alter_table('resource_bindings', schema=None) as batch_op:
        batch_op.drop_index('ix_resource_bindings_updated_at')

