"""Value types of the placement engine: what goes in (bindings, cluster snapshots, config) and what comes out.

Invariants:
- Every type is a frozen slotted dataclass; mappings inside are never mutated after construction (build a
  new snapshot instead, e.g. ``engine.assume``).
- Resource quantities are plain ints in base units: ``cpu`` in milli-cores, memory and ``ephemeral-storage``
  in bytes, ``pods`` and extended resources (``nvidia.com/gpu``) in units. ``federation.scheduling.snapshot``
  converts Kubernetes quantities into this form.
- ``ClusterSnapshot.api_enablements`` holds ``"<groupVersion>/<Kind>"`` strings (``"apps/v1/Deployment"``,
  ``"v1/ConfigMap"``), Karmada's ``IsAPIEnabled`` key; ``None`` means the cluster never reported any.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from federation.model.placement import Placement, Taint
from federation.model.workloadpolicy import WorkloadPolicySpec

ResultReason = Literal["Success", "Unschedulable", "NoClusterFit", "SchedulerError"]
Resources = Mapping[str, int]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """What the engine knows about one member cluster at the start of a scheduling cycle."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    provider: str = ""
    region: str = ""
    zone: str = ""
    zones: tuple[str, ...] = ()
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    deleting: bool = False
    api_enablements: frozenset[str] | None = None
    # None: no status.resourceSummary at all (Karmada's estimator then answers 0 replicas).
    allocatable: Resources | None = None
    allocated: Resources = field(default_factory=dict)
    allocating: Resources = field(default_factory=dict)

    def free(self, resource: str) -> int:
        """allocatable - allocated - allocating (may be negative when over-committed); 0 if unknown."""
        if self.allocatable is None:
            return 0
        used = self.allocated.get(resource, 0) + self.allocating.get(resource, 0)
        return self.allocatable.get(resource, 0) - used


@dataclass(frozen=True, slots=True)
class TargetCluster:
    """One entry of ``spec.clusters``; ``replicas`` is 0 for non-workloads (Karmada omits the field)."""

    name: str
    replicas: int = 0


@dataclass(frozen=True, slots=True)
class BindingInput:
    """The part of a ResourceBinding (plus its template) that scheduling reads.

    ``previous`` is ``spec.clusters`` in its stored order. ``fresh`` is Karmada's ``RescheduleRequired``
    (``triggers.reschedule_required``). ``eviction_clusters`` are the ``fromCluster`` of graceful-eviction
    tasks; ``avoid`` is the failover retry list (ignored, and reported, when nothing else fits).
    ``observed_affinity`` is ``status.schedulerObservingAffinityName``. ``workload_policy`` is the Kosmos
    WorkloadPolicy already resolved for the template (see ``workloadpolicy.select_policy``).
    """

    kind: str
    api_version: str
    name: str
    namespace: str = ""
    uid: str = ""
    replicas: int = 0
    resource_request: Resources = field(default_factory=dict)
    has_replica_requirements: bool = False
    placement: Placement = field(default_factory=Placement)
    previous: Mapping[str, int] = field(default_factory=dict)
    fresh: bool = False
    eviction_clusters: frozenset[str] = frozenset()
    avoid: frozenset[str] = frozenset()
    observed_affinity: str = ""
    workload_policy: WorkloadPolicySpec | None = None

    @property
    def is_workload(self) -> bool:
        """Karmada divides replicas only for ``replicas > 0 || replicaRequirements != nil``."""
        return self.replicas > 0 or self.has_replica_requirements

    @property
    def gvk(self) -> str:
        return f"{self.api_version}/{self.kind}"


@dataclass(frozen=True, slots=True)
class Headroom:
    """Capacity kept free for one resource: the larger of ``percent`` of allocatable and ``floor``."""

    percent: float = 0.0
    floor: int = 0

    def reserve(self, allocatable: int) -> int:
        # Round the percentage up: headroom is a promise to keep at least this much free.
        # Integer arithmetic in millionths of a percent-unit: a float product of a byte count can round
        # the reserve down; the percentage itself is kept to 4 decimals.
        millionths = round(self.percent * 10_000)
        return max(-(-allocatable * millionths // 1_000_000), self.floor)


DEFAULT_SCORE_WEIGHTS: Mapping[str, int] = {
    "ClusterLocality": 1,
    "LeastAllocated": 0,
    "MostFreeMemory": 0,
    "BalancedAllocation": 0,
}


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Knobs the lead builds from settings. Defaults reproduce Karmada (ResourceFit acts only with headroom).

    ``disabled_plugins`` takes filter/score names (``TaintToleration``, ``ResourceFit``,
    ``LeastAllocated``...), like Karmada's ``--plugins=-Name``. ``api_enablements_unreported_pass`` lets
    clusters that never reported
    ``status.apiEnablements`` through the APIEnablement filter (Karmada: they fail).
    """

    score_weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))
    headroom: Mapping[str, Headroom] = field(default_factory=dict)
    disabled_plugins: frozenset[str] = frozenset()
    enable_empty_workload_propagation: bool = False
    api_enablements_unreported_pass: bool = False

    def enabled(self, plugin: str) -> bool:
        return plugin not in self.disabled_plugins


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """The outcome of one ``engine.schedule`` call.

    ``writes_clusters`` says whether the caller patches ``spec.clusters`` (Karmada: Success writes the result,
    NoClusterFit writes an empty list, Unschedulable and SchedulerError keep the previous placement).
    """

    clusters: tuple[TargetCluster, ...]
    result: ResultReason
    message: str = ""
    explanation: Mapping[str, Any] = field(default_factory=dict)
    affinity_name: str | None = None
    unplaced: int = 0
    avoid_ignored: bool = False

    @property
    def writes_clusters(self) -> bool:
        return self.result in ("Success", "NoClusterFit")

    @property
    def succeeded(self) -> bool:
        return self.result == "Success"
