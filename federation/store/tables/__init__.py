"""All tables of the store; ``metadata`` is what Alembic migrates and compares against.

Importing this package registers every table on ``Base.metadata``.
"""

from federation.store.tables.base import Base, ClaimMixin, ObjectMixin, table_of
from federation.store.tables.bindings import (
    BindingTargetClusterRow,
    GracefulEvictionTaskRow,
    ResourceBindingRow,
)
from federation.store.tables.changelog import ChangeLogRow, RevisionCounterRow
from federation.store.tables.failover import (
    ClusterTaintPolicyRow,
    FailoverHistoryRow,
    WorkloadHealthRow,
)
from federation.store.tables.objects import (
    ClusterPropagationPolicyRow,
    ClusterRow,
    PropagationPolicyRow,
    ResourceTemplateRow,
    WorkloadPolicyRow,
    WorkloadRebalancerRow,
)
from federation.store.tables.records import (
    ApiTokenRow,
    ControllerCheckpointRow,
    EventRow,
    KeyFingerprintRow,
    LeaseRow,
    SchedulingDecisionRow,
)
from federation.store.tables.works import EXECUTION_SPACE_PREFIX, WorkRow

metadata = Base.metadata

__all__ = [
    "EXECUTION_SPACE_PREFIX",
    "ApiTokenRow",
    "Base",
    "BindingTargetClusterRow",
    "ChangeLogRow",
    "ClaimMixin",
    "ClusterPropagationPolicyRow",
    "ClusterRow",
    "ClusterTaintPolicyRow",
    "ControllerCheckpointRow",
    "EventRow",
    "FailoverHistoryRow",
    "GracefulEvictionTaskRow",
    "KeyFingerprintRow",
    "LeaseRow",
    "ObjectMixin",
    "PropagationPolicyRow",
    "ResourceBindingRow",
    "ResourceTemplateRow",
    "RevisionCounterRow",
    "SchedulingDecisionRow",
    "WorkRow",
    "WorkloadHealthRow",
    "WorkloadPolicyRow",
    "WorkloadRebalancerRow",
    "metadata",
    "table_of",
]
