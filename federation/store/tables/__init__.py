"""All tables of the store; ``metadata`` is what Alembic migrates and compares against.

Importing this package registers every table on ``Base.metadata``.
"""

from federation.store.tables.base import Base, ClaimMixin, ObjectMixin, table_of
from federation.store.tables.bindings import (
    BindingTargetClusterRow,
    GracefulEvictionTaskRow,
    ResourceBindingRow,
)
from federation.store.tables.objects import (
    ClusterPropagationPolicyRow,
    ClusterRow,
    PropagationPolicyRow,
    ResourceTemplateRow,
    WorkloadPolicyRow,
    WorkloadRebalancerRow,
)
from federation.store.tables.records import ApiTokenRow, EventRow, LeaseRow, SchedulingDecisionRow
from federation.store.tables.works import EXECUTION_SPACE_PREFIX, WorkRow

metadata = Base.metadata

__all__ = [
    "EXECUTION_SPACE_PREFIX",
    "ApiTokenRow",
    "Base",
    "BindingTargetClusterRow",
    "ClaimMixin",
    "ClusterPropagationPolicyRow",
    "ClusterRow",
    "EventRow",
    "GracefulEvictionTaskRow",
    "LeaseRow",
    "ObjectMixin",
    "PropagationPolicyRow",
    "ResourceBindingRow",
    "ResourceTemplateRow",
    "SchedulingDecisionRow",
    "WorkRow",
    "WorkloadPolicyRow",
    "WorkloadRebalancerRow",
    "metadata",
    "table_of",
]
