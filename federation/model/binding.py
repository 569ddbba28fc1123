"""Karmada ResourceBinding / ClusterResourceBinding (``work.karmada.io/v1alpha2``), semantics §8.1.

Source: karmada-io/karmada ``pkg/apis/work/v1alpha2/binding_types.go``, ``pkg/util/names/names.go``
(``GenerateBindingName``), ``pkg/util/binding.go`` (``RescheduleRequired``).

Invariants:
- Both kinds share ``ResourceBindingSpec``/``ResourceBindingStatus``; RB is namespaced, CRB cluster-scoped.
- ``binding_name`` reproduces ``GenerateBindingName`` exactly: ``lower(name + "-" + kind)`` with ``:`` in the
  name replaced by ``.`` (RBAC object names may contain ``:``).
- A binding "is a workload" (gets replica division) iff ``replicas > 0`` or ``replicaRequirements`` is set
  (§1.1); everything else is propagated whole to every candidate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from federation.model.base import Int32, Int64, KubeModel, QuantityValue, StrictBool, StrictStr
from federation.model.meta import Condition, ObjectMeta, find_condition
from federation.model.placement import Placement, Toleration
from federation.model.policy import FailoverBehavior, PurgeMode, Suspension

Health = Literal["Healthy", "Unhealthy", "Unknown"]

CONDITION_SCHEDULED = "Scheduled"
CONDITION_FULLY_APPLIED = "FullyApplied"
REASON_SUCCESS = "Success"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_NO_CLUSTER_FIT = "NoClusterFit"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_QUOTA_EXCEEDED = "QuotaExceeded"
PERMANENT_ID_LABEL = "resourcebinding.karmada.io/permanent-id"
CLUSTER_PERMANENT_ID_LABEL = "clusterresourcebinding.karmada.io/permanent-id"
APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
BINDING_FINALIZER = "karmada.io/binding-controller"


def binding_name(name: str, kind: str) -> str:
    """Karmada ``GenerateBindingName``: ``lower(<name>-<kind>)``, ``:`` in the name replaced by ``.``."""
    return f"{name.replace(':', '.')}-{kind}".lower()


class ObjectReference(KubeModel):
    api_version: StrictStr
    kind: StrictStr
    namespace: StrictStr | None = None
    name: StrictStr
    uid: StrictStr | None = None
    resource_version: StrictStr | None = None


class NodeClaim(KubeModel):
    hard_node_affinity: dict[str, Any] | None = None
    node_selector: dict[StrictStr, StrictStr] | None = None
    tolerations: tuple[Toleration, ...] | None = None


class ReplicaRequirements(KubeModel):
    node_claim: NodeClaim | None = None
    resource_request: dict[StrictStr, QuantityValue] | None = None
    namespace: StrictStr | None = None
    priority_class_name: StrictStr | None = None


class TargetCluster(KubeModel):
    name: StrictStr
    replicas: Int32 | None = None


class GracefulEvictionTask(KubeModel):
    from_cluster: StrictStr
    purge_mode: PurgeMode | None = None
    replicas: Int32 | None = None
    reason: StrictStr
    message: StrictStr | None = None
    producer: StrictStr
    grace_period_seconds: Int32 | None = None
    suppress_deletion: StrictBool | None = None
    preserved_label_state: dict[StrictStr, StrictStr] | None = None
    clusters_before_failover: tuple[StrictStr, ...] | None = None
    creation_timestamp: datetime | None = None


class BindingSnapshot(KubeModel):
    namespace: StrictStr | None = None
    name: StrictStr
    clusters: tuple[TargetCluster, ...] | None = None


class SchedulePriorityValue(KubeModel):
    priority: Int32 | None = None


class ResourceBindingSpec(KubeModel):
    resource: ObjectReference
    propagate_deps: StrictBool | None = None
    replica_requirements: ReplicaRequirements | None = None
    replicas: Int32 | None = None
    components: tuple[dict[str, Any], ...] | None = None
    clusters: tuple[TargetCluster, ...] | None = None
    placement: Placement | None = None
    graceful_eviction_tasks: tuple[GracefulEvictionTask, ...] | None = None
    required_by: tuple[BindingSnapshot, ...] | None = None
    scheduler_name: StrictStr | None = None
    failover: FailoverBehavior | None = None
    conflict_resolution: Literal["Abort", "Overwrite", ""] | None = None
    reschedule_triggered_at: datetime | None = None
    suspension: Suspension | None = None
    preserve_resources_on_deletion: StrictBool | None = None
    schedule_priority: SchedulePriorityValue | None = None

    def is_workload(self) -> bool:
        """Karmada: replica division applies iff replicas > 0 or replicaRequirements is set."""
        return (self.replicas or 0) > 0 or self.replica_requirements is not None

    def target_clusters(self) -> tuple[TargetCluster, ...]:
        return self.clusters or ()

    def assigned_replicas(self) -> int:
        return sum(c.replicas or 0 for c in self.target_clusters())

    def eviction_tasks(self) -> tuple[GracefulEvictionTask, ...]:
        return self.graceful_eviction_tasks or ()

    def scheduling_suspended(self) -> bool:
        return bool(self.suspension and self.suspension.scheduling)


class AggregatedStatusItem(KubeModel):
    cluster_name: StrictStr
    status: dict[str, Any] | None = None
    applied: StrictBool | None = None
    applied_message: StrictStr | None = None
    health: Literal["Healthy", "Unhealthy", "Unknown", ""] | None = None


class ResourceBindingStatus(KubeModel):
    scheduler_observed_generation: Int64 | None = None
    scheduler_observing_affinity_name: StrictStr | None = None
    last_scheduled_time: datetime | None = None
    conditions: tuple[Condition, ...] | None = None
    aggregated_status: tuple[AggregatedStatusItem, ...] | None = None


def reschedule_required(spec: ResourceBindingSpec, status: ResourceBindingStatus | None) -> bool:
    """Karmada ``RescheduleRequired``: both times set, ``rescheduleTriggeredAt`` after the last schedule."""
    last = status.last_scheduled_time if status else None
    triggered = spec.reschedule_triggered_at
    return triggered is not None and last is not None and triggered > last


class _BindingBase(KubeModel):
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceBindingSpec
    status: ResourceBindingStatus | None = None

    def scheduled_condition(self) -> Condition | None:
        return find_condition(self.status.conditions if self.status else None, CONDITION_SCHEDULED)

    def reschedule_required(self) -> bool:
        return reschedule_required(self.spec, self.status)


class ResourceBinding(_BindingBase):
    api_version: Literal["work.karmada.io/v1alpha2"] = "work.karmada.io/v1alpha2"
    kind: Literal["ResourceBinding"] = "ResourceBinding"


class ClusterResourceBinding(_BindingBase):
    api_version: Literal["work.karmada.io/v1alpha2"] = "work.karmada.io/v1alpha2"
    kind: Literal["ClusterResourceBinding"] = "ClusterResourceBinding"
