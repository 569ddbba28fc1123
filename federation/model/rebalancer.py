"""Karmada WorkloadRebalancer (``apps.karmada.io/v1alpha1``, cluster-scoped), semantics §7.

Source: karmada-io/karmada ``pkg/apis/apps/v1alpha1/workloadrebalancer_types.go`` and the CRD
``charts/karmada/_crds/bases/apps/apps.karmada.io_workloadrebalancers.yaml``.

Invariants:
- ``spec.workloads`` has at least one item; an empty ``namespace`` means a cluster-scoped resource (its
  binding is a ClusterResourceBinding).
- ``spec`` is immutable after creation (Karmada's validating webhook); ``validate_update`` in
  ``federation.model.validation`` enforces that.
- ``ttlSecondsAfterFinished``: unset → never deleted; 0 → deleted right after finishing.
- Observed workloads sort by the string ``"apiVersion kind namespace name"`` (``ObjectReference.sort_key``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from federation.model.base import Int32, Int64, KubeModel, StrictStr
from federation.model.binding import binding_name
from federation.model.meta import ObjectMeta

RESULT_SUCCESSFUL = "Successful"
RESULT_FAILED = "Failed"
REASON_BINDING_NOT_FOUND = "ReferencedBindingNotFound"


class ObjectReference(KubeModel):
    api_version: StrictStr
    kind: StrictStr
    name: StrictStr
    namespace: StrictStr | None = None

    def sort_key(self) -> str:
        return f"{self.api_version} {self.kind} {self.namespace or ''} {self.name}"

    def binding_name(self) -> str:
        """The name of the (Cluster)ResourceBinding this workload is propagated by."""
        return binding_name(self.name, self.kind)

    def is_cluster_scoped(self) -> bool:
        return not self.namespace


class WorkloadRebalancerSpec(KubeModel):
    workloads: tuple[ObjectReference, ...]
    ttl_seconds_after_finished: Int32 | None = None


class ObservedWorkload(KubeModel):
    workload: ObjectReference
    result: Literal["Successful", "Failed", ""] | None = None
    reason: StrictStr | None = None


class WorkloadRebalancerStatus(KubeModel):
    observed_workloads: tuple[ObservedWorkload, ...] | None = None
    observed_generation: Int64 | None = None
    finish_time: datetime | None = None


class WorkloadRebalancer(KubeModel):
    api_version: Literal["apps.karmada.io/v1alpha1"] = "apps.karmada.io/v1alpha1"
    kind: Literal["WorkloadRebalancer"] = "WorkloadRebalancer"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadRebalancerSpec
    status: WorkloadRebalancerStatus | None = None
