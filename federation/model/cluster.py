"""Karmada ``cluster.karmada.io/v1alpha1`` Cluster (cluster-scoped).

Source: karmada-io/karmada ``pkg/apis/cluster/v1alpha1/types.go`` (semantics §10).

Invariants:
- JSON names are Karmada's, including the irregular ``insecureSkipTLSVerification`` and ``proxyURL``.
- Resource quantities (``status.resourceSummary``, ``resourceModels`` ranges) keep their original string form;
  ``ResourceSummary.free``/``quantity`` helpers parse them to exact ``Decimal``.
- ``zones`` wins over the deprecated ``zone``; ``Cluster.effective_zones()`` folds the two.
- ``ready_status()`` reads the ``Ready`` condition only; it returns None when the condition is absent
  (a cluster that has never been probed), which callers must not treat as ready.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from federation.model.base import Field, Int32, Int64, KubeModel, QuantityValue, StrictBool, StrictStr, Uint64
from federation.model.meta import Condition, ObjectMeta, find_condition
from federation.model.placement import Taint
from federation.model.quantity import parse_quantity

SYNC_MODES: tuple[str, ...] = ("Push", "Pull")


class LocalSecretReference(KubeModel):
    namespace: StrictStr | None = None
    name: StrictStr | None = None


class ResourceModelRange(KubeModel):
    """``[min, max)`` of one resource inside a grade."""

    name: StrictStr
    min: QuantityValue
    max: QuantityValue


class ResourceModel(KubeModel):
    grade: Uint64
    ranges: tuple[ResourceModelRange, ...]


class ClusterSpec(KubeModel):
    id: StrictStr | None = None
    sync_mode: Literal["Push", "Pull"]
    api_endpoint: StrictStr | None = None
    secret_ref: LocalSecretReference | None = None
    impersonator_secret_ref: LocalSecretReference | None = None
    insecure_skip_tls_verification: StrictBool | None = Field(
        default=None, alias="insecureSkipTLSVerification"
    )
    proxy_url: StrictStr | None = Field(default=None, alias="proxyURL")
    proxy_header: dict[StrictStr, StrictStr] | None = None
    provider: StrictStr | None = None
    region: StrictStr | None = None
    zone: StrictStr | None = None
    zones: tuple[StrictStr, ...] | None = None
    taints: tuple[Taint, ...] | None = None
    resource_models: tuple[ResourceModel, ...] | None = None


class APIResource(KubeModel):
    name: StrictStr
    kind: StrictStr


class APIEnablement(KubeModel):
    group_version: StrictStr
    resources: tuple[APIResource, ...] | None = None


class NodeSummary(KubeModel):
    total_num: Int32 | None = None
    ready_num: Int32 | None = None


class AllocatableModeling(KubeModel):
    grade: Uint64
    count: Int64


class ResourceSummary(KubeModel):
    """Per-resource totals; each map is resource name → quantity."""

    allocatable: dict[StrictStr, QuantityValue] | None = None
    allocating: dict[StrictStr, QuantityValue] | None = None
    allocated: dict[StrictStr, QuantityValue] | None = None
    allocatable_modelings: tuple[AllocatableModeling, ...] | None = None

    def quantity(self, which: Literal["allocatable", "allocating", "allocated"], name: str) -> Decimal:
        """One entry as a Decimal; a missing entry is 0."""
        value = (getattr(self, which) or {}).get(name)
        return Decimal(0) if value is None else parse_quantity(value)

    def has(self, name: str) -> bool:
        """True iff ``allocatable`` lists the resource (Karmada: missing from allocatable → 0 replicas)."""
        return name in (self.allocatable or {})

    def free(self, name: str) -> Decimal:
        """``allocatable - allocated - allocating`` (may be negative; callers clamp)."""
        return (
            self.quantity("allocatable", name)
            - self.quantity("allocated", name)
            - self.quantity("allocating", name)
        )


class ClusterStatus(KubeModel):
    kubernetes_version: StrictStr | None = None
    api_enablements: tuple[APIEnablement, ...] | None = None
    conditions: tuple[Condition, ...] | None = None
    node_summary: NodeSummary | None = None
    resource_summary: ResourceSummary | None = None
    remedy_actions: tuple[StrictStr, ...] | None = None


class Cluster(KubeModel):
    api_version: Literal["cluster.karmada.io/v1alpha1"] = "cluster.karmada.io/v1alpha1"
    kind: Literal["Cluster"] = "Cluster"
    metadata: ObjectMeta = ObjectMeta()
    spec: ClusterSpec
    status: ClusterStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.metadata.labels or {})

    def ready_status(self) -> Literal["True", "False", "Unknown"] | None:
        """The ``Ready`` condition's status, or None when there is no Ready condition."""
        condition = find_condition(self.status.conditions if self.status else None, "Ready")
        return condition.status if condition else None

    def is_ready(self) -> bool:
        return self.ready_status() == "True"

    def effective_zones(self) -> tuple[str, ...]:
        """``spec.zones``, else the deprecated ``spec.zone`` as a one-element tuple, else empty."""
        if self.spec.zones:
            return self.spec.zones
        return (self.spec.zone,) if self.spec.zone else ()

    def taints(self) -> tuple[Taint, ...]:
        return self.spec.taints or ()

    def api_enabled(self, api_version: str, kind: str) -> bool:
        """True iff ``status.apiEnablements`` lists ``kind`` under ``api_version`` (Karmada APIEnablement)."""
        for enablement in (self.status.api_enablements if self.status else None) or ():
            if enablement.group_version == api_version:
                return any(r.kind == kind for r in enablement.resources or ())
        return False

    def complete_api_enablements(self) -> bool:
        """The ``CompleteAPIEnablements`` condition is True (a missing API is then known to be disabled)."""
        condition = find_condition(self.status.conditions if self.status else None, "CompleteAPIEnablements")
        return condition is not None and condition.status == "True"


def stamp_no_execute_taints(cluster: dict[str, Any], now: str) -> None:
    """Karmada's ``MutateClusterTaints`` (the Cluster strategy's Canonicalize): a NoExecute taint written
    without ``timeAdded`` gets ``now``, so its tolerations count from when it was written (the taint manager
    never triggers on a taint without one). ``cluster`` is a manifest being written; changed in place."""
    for taint in (cluster.get("spec") or {}).get("taints") or []:
        if isinstance(taint, dict) and taint.get("effect") == "NoExecute" and not taint.get("timeAdded"):
            taint["timeAdded"] = now
