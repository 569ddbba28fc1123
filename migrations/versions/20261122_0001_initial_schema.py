"""Initial schema: every table of federation.store.tables at the first release.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 04:02:52.582823
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('api_tokens',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('cluster_name', sa.String(length=253), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('name', name=op.f('uq_api_tokens_name')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_api_tokens_token_hash'))
    )
    op.create_table('cluster_propagation_policies',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cluster_propagation_policies')),
    sa.UniqueConstraint('namespace', 'name', name='uq_cluster_propagation_policies_namespace_name'),
    sa.UniqueConstraint('uid', name=op.f('uq_cluster_propagation_policies_uid'))
    )
    op.create_table('clusters',
    sa.Column('region', sa.String(length=253), nullable=True),
    sa.Column('zone', sa.String(length=253), nullable=True),
    sa.Column('provider', sa.String(length=253), nullable=True),
    sa.Column('sync_mode', sa.String(length=16), nullable=True),
    sa.Column('taints', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('credentials', sa.LargeBinary(), nullable=True),
    sa.Column('ready', sa.Boolean(), nullable=True),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_clusters')),
    sa.UniqueConstraint('namespace', 'name', name='uq_clusters_namespace_name'),
    sa.UniqueConstraint('uid', name=op.f('uq_clusters_uid'))
    )
    op.create_index(op.f('ix_clusters_provider'), 'clusters', ['provider'], unique=False)
    op.create_index(op.f('ix_clusters_ready'), 'clusters', ['ready'], unique=False)
    op.create_index(op.f('ix_clusters_region'), 'clusters', ['region'], unique=False)
    op.create_index(op.f('ix_clusters_sync_mode'), 'clusters', ['sync_mode'], unique=False)
    op.create_index(op.f('ix_clusters_zone'), 'clusters', ['zone'], unique=False)
    op.create_table('events',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dedup_key', sa.String(length=64), nullable=False),
    sa.Column('involved_kind', sa.String(length=253), nullable=False),
    sa.Column('involved_namespace', sa.String(length=253), nullable=False),
    sa.Column('involved_name', sa.String(length=253), nullable=False),
    sa.Column('involved_uid', sa.String(length=36), nullable=False),
    sa.Column('type', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.String(length=253), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('source', sa.String(length=253), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('first_timestamp', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_timestamp', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_events')),
    sa.UniqueConstraint('dedup_key', name=op.f('uq_events_dedup_key'))
    )
    op.create_index('ix_events_involved', 'events', ['involved_kind', 'involved_namespace', 'involved_name', 'last_timestamp'], unique=False)
    op.create_index(op.f('ix_events_last_timestamp'), 'events', ['last_timestamp'], unique=False)
    op.create_table('leases',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('holder', sa.String(length=253), nullable=True),
    sa.Column('acquired_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('renew_time', sa.DateTime(timezone=True), nullable=True),
    sa.Column('duration_seconds', sa.Integer(), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('transitions', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_leases')),
    sa.UniqueConstraint('kind', 'name', name='uq_leases_kind_name')
    )
    op.create_table('propagation_policies',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_propagation_policies')),
    sa.UniqueConstraint('namespace', 'name', name='uq_propagation_policies_namespace_name'),
    sa.UniqueConstraint('uid', name=op.f('uq_propagation_policies_uid'))
    )
    op.create_table('resource_bindings',
    sa.Column('needs_scheduling', sa.Boolean(), nullable=False),
    sa.Column('template_uid', sa.String(length=36), nullable=True),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('claimed_by', sa.String(length=253), nullable=True),
    sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('dirty_seq', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_resource_bindings')),
    sa.UniqueConstraint('kind', 'namespace', 'name', name='uq_resource_bindings_kind_namespace_name'),
    sa.UniqueConstraint('uid', name=op.f('uq_resource_bindings_uid'))
    )
    op.create_index('ix_resource_bindings_needs_scheduling_id', 'resource_bindings', ['needs_scheduling', 'id'], unique=False)
    op.create_index(op.f('ix_resource_bindings_template_uid'), 'resource_bindings', ['template_uid'], unique=False)
    op.create_table('resource_templates',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_resource_templates')),
    sa.UniqueConstraint('api_version', 'kind', 'namespace', 'name', name='uq_resource_templates_api_version_kind'),
    sa.UniqueConstraint('uid', name=op.f('uq_resource_templates_uid'))
    )
    op.create_index('ix_resource_templates_kind', 'resource_templates', ['kind'], unique=False)
    op.create_table('scheduling_decisions',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('binding_uid', sa.String(length=36), nullable=False),
    sa.Column('binding_kind', sa.String(length=253), nullable=False),
    sa.Column('binding_namespace', sa.String(length=253), nullable=False),
    sa.Column('binding_name', sa.String(length=253), nullable=False),
    sa.Column('binding_generation', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('result', sa.String(length=64), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('clusters', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('explanation', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_scheduling_decisions'))
    )
    op.create_index('ix_scheduling_decisions_binding_uid_created_at', 'scheduling_decisions', ['binding_uid', 'created_at'], unique=False)
    op.create_index(op.f('ix_scheduling_decisions_created_at'), 'scheduling_decisions', ['created_at'], unique=False)
    op.create_index(op.f('ix_scheduling_decisions_result'), 'scheduling_decisions', ['result'], unique=False)
    op.create_table('workload_policies',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workload_policies')),
    sa.UniqueConstraint('namespace', 'name', name='uq_workload_policies_namespace_name'),
    sa.UniqueConstraint('uid', name=op.f('uq_workload_policies_uid'))
    )
    op.create_table('workload_rebalancers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workload_rebalancers')),
    sa.UniqueConstraint('namespace', 'name', name='uq_workload_rebalancers_namespace_name'),
    sa.UniqueConstraint('uid', name=op.f('uq_workload_rebalancers_uid'))
    )
    op.create_table('binding_target_clusters',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('binding_id', sa.Integer(), nullable=False),
    sa.Column('cluster_name', sa.String(length=253), nullable=False),
    sa.Column('replicas', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['binding_id'], ['resource_bindings.id'], name=op.f('fk_binding_target_clusters_binding_id_resource_bindings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_binding_target_clusters')),
    sa.UniqueConstraint('binding_id', 'cluster_name', name='uq_binding_target_clusters')
    )
    op.create_index(op.f('ix_binding_target_clusters_cluster_name'), 'binding_target_clusters', ['cluster_name'], unique=False)
    op.create_table('graceful_eviction_tasks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('binding_id', sa.Integer(), nullable=False),
    sa.Column('from_cluster', sa.String(length=253), nullable=False),
    sa.Column('replicas', sa.Integer(), nullable=True),
    sa.Column('reason', sa.String(length=253), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('producer', sa.String(length=253), nullable=False),
    sa.Column('creation_timestamp', sa.DateTime(timezone=True), nullable=True),
    sa.Column('grace_period_seconds', sa.Integer(), nullable=True),
    sa.Column('suppress_deletion', sa.Boolean(), nullable=True),
    sa.Column('purge_mode', sa.String(length=32), nullable=True),
    sa.Column('clusters_before_failover', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.ForeignKeyConstraint(['binding_id'], ['resource_bindings.id'], name=op.f('fk_graceful_eviction_tasks_binding_id_resource_bindings'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_graceful_eviction_tasks')),
    sa.UniqueConstraint('binding_id', 'from_cluster', name='uq_graceful_eviction_tasks')
    )
    op.create_index(op.f('ix_graceful_eviction_tasks_creation_timestamp'), 'graceful_eviction_tasks', ['creation_timestamp'], unique=False)
    op.create_index(op.f('ix_graceful_eviction_tasks_from_cluster'), 'graceful_eviction_tasks', ['from_cluster'], unique=False)
    op.create_table('works',
    sa.Column('cluster_name', sa.String(length=253), nullable=False),
    sa.Column('binding_id', sa.Integer(), nullable=True),
    sa.Column('manifest_hash', sa.String(length=64), nullable=False),
    sa.Column('needs_sync', sa.Boolean(), nullable=False),
    sa.Column('applied', sa.Boolean(), nullable=True),
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uid', sa.String(length=36), nullable=False),
    sa.Column('api_version', sa.String(length=253), nullable=False),
    sa.Column('kind', sa.String(length=253), nullable=False),
    sa.Column('namespace', sa.String(length=253), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('resource_version', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('annotations', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('metadata_extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('status', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('extra', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('claimed_by', sa.String(length=253), nullable=True),
    sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('dirty_seq', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['binding_id'], ['resource_bindings.id'], name=op.f('fk_works_binding_id_resource_bindings'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_works')),
    sa.UniqueConstraint('namespace', 'name', name='uq_works_namespace_name'),
    sa.UniqueConstraint('uid', name=op.f('uq_works_uid'))
    )
    op.create_index(op.f('ix_works_binding_id'), 'works', ['binding_id'], unique=False)
    op.create_index(op.f('ix_works_cluster_name'), 'works', ['cluster_name'], unique=False)
    op.create_index('ix_works_needs_sync_id', 'works', ['needs_sync', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_works_needs_sync_id', table_name='works')
    op.drop_index(op.f('ix_works_cluster_name'), table_name='works')
    op.drop_index(op.f('ix_works_binding_id'), table_name='works')
    op.drop_table('works')
    op.drop_index(op.f('ix_graceful_eviction_tasks_from_cluster'), table_name='graceful_eviction_tasks')
    op.drop_index(op.f('ix_graceful_eviction_tasks_creation_timestamp'), table_name='graceful_eviction_tasks')
    op.drop_table('graceful_eviction_tasks')
    op.drop_index(op.f('ix_binding_target_clusters_cluster_name'), table_name='binding_target_clusters')
    op.drop_table('binding_target_clusters')
    op.drop_table('workload_rebalancers')
    op.drop_table('workload_policies')
    op.drop_index(op.f('ix_scheduling_decisions_result'), table_name='scheduling_decisions')
    op.drop_index(op.f('ix_scheduling_decisions_created_at'), table_name='scheduling_decisions')
    op.drop_index('ix_scheduling_decisions_binding_uid_created_at', table_name='scheduling_decisions')
    op.drop_table('scheduling_decisions')
    op.drop_index('ix_resource_templates_kind', table_name='resource_templates')
    op.drop_table('resource_templates')
    op.drop_index(op.f('ix_resource_bindings_template_uid'), table_name='resource_bindings')
    op.drop_index('ix_resource_bindings_needs_scheduling_id', table_name='resource_bindings')
    op.drop_table('resource_bindings')
    op.drop_table('propagation_policies')
    op.drop_table('leases')
    op.drop_index(op.f('ix_events_last_timestamp'), table_name='events')
    op.drop_index('ix_events_involved', table_name='events')
    op.drop_table('events')
    op.drop_index(op.f('ix_clusters_zone'), table_name='clusters')
    op.drop_index(op.f('ix_clusters_sync_mode'), table_name='clusters')
    op.drop_index(op.f('ix_clusters_region'), table_name='clusters')
    op.drop_index(op.f('ix_clusters_ready'), table_name='clusters')
    op.drop_index(op.f('ix_clusters_provider'), table_name='clusters')
    op.drop_table('clusters')
    op.drop_table('cluster_propagation_policies')
    op.drop_table('api_tokens')
