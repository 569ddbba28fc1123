"""Value types of the placement engine: what goes in (bindings, cluster snapshots, config) and what comes out.

Invariants:
- Every type is a frozen slotted dataclass; mappings inside are never mutated after construction (build a
  new snapshot instead, e.g. ``engine.assume`` through ``ClusterSnapshot.with_allocating``, which fills a
  new object's slots before anyone sees it). What a value caches (``EngineConfig``'s unnamed profile) is
  made with it and takes no part in its equality.
- Resource quantities are plain ints in base units: ``cpu`` in milli-cores, memory and ``ephemeral-storage``
  in bytes, ``pods`` and extended resources (``nvidia.com/gpu``) in units. ``federation.scheduling.snapshot``
  converts Kubernetes quantities into this form.
- ``ClusterSnapshot.api_enablements`` holds ``"<groupVersion>/<Kind>"`` strings (``"apps/v1/Deployment"``,
  ``"v1/ConfigMap"``), Karmada's ``IsAPIEnabled`` key; ``None`` means the cluster never reported any.
- An ``EngineConfig`` names only score plugins of ``SCORE_PLUGINS`` and a ``default_profile`` among its
  ``profiles``: anything else is a ``ValueError`` listing the valid names (a typo must not score 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
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

    def with_allocating(self, allocating: Resources) -> ClusterSnapshot:
        """This snapshot with another ``allocating`` (``dataclasses.replace``): ``engine.assume`` makes one
        for every cluster that took replicas, binding after binding, so it sets the slots directly, at a
        third of the cost of the frozen ``__init__`` (which goes through ``object.__setattr__`` for every
        field). Every field is named here (a test holds this to ``replace`` over all of them)."""
        out: ClusterSnapshot = _new_snapshot(ClusterSnapshot)
        _set_name(out, self.name)
        _set_labels(out, self.labels)
        _set_provider(out, self.provider)
        _set_region(out, self.region)
        _set_zone(out, self.zone)
        _set_zones(out, self.zones)
        _set_taints(out, self.taints)
        _set_ready(out, self.ready)
        _set_deleting(out, self.deleting)
        _set_api_enablements(out, self.api_enablements)
        _set_allocatable(out, self.allocatable)
        _set_allocated(out, self.allocated)
        _set_allocating(out, allocating)
        return out

    def same_but_allocating(self, other: ClusterSnapshot) -> bool:
        """Whether ``other`` holds what this snapshot holds in every field but ``allocating`` (as a snapshot
        ``with_allocating`` made from it does): whatever reads no allocation reads the same of both. Every
        field is named (a test changes each one alone), compared in order of how likely it differs."""
        return (
            self.allocated == other.allocated
            and self.allocatable == other.allocatable
            and self.name == other.name
            and self.labels == other.labels
            and self.taints == other.taints
            and self.api_enablements == other.api_enablements
            and self.ready == other.ready
            and self.deleting == other.deleting
            and self.provider == other.provider
            and self.region == other.region
            and self.zone == other.zone
            and self.zones == other.zones
        )


_new_snapshot = object.__new__
# The slots' setters in field order: unpacking fails at import when a field is added and not named here.
(
    _set_name,
    _set_labels,
    _set_provider,
    _set_region,
    _set_zone,
    _set_zones,
    _set_taints,
    _set_ready,
    _set_deleting,
    _set_api_enablements,
    _set_allocatable,
    _set_allocated,
    _set_allocating,
) = tuple(ClusterSnapshot.__dict__[f.name].__set__ for f in fields(ClusterSnapshot))


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
    WorkloadPolicy already resolved for the template (see ``workloadpolicy.select_policy``);
    ``workload_policy_used`` is what the policy's other workloads already run per topology value (their
    share of its counts, from ``workloadpolicy.QuotaLedger``).
    ``service_class`` is the template's ``scheduling.federation.io/service-class`` ("" for none): it picks
    the ``ServiceProfile`` the binding is filtered and scored with.
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
    workload_policy_used: Mapping[str, int] = field(default_factory=dict)
    service_class: str = ""

    @property
    def is_workload(self) -> bool:
        """Karmada divides replicas only for ``replicas > 0 || replicaRequirements != nil``."""
        return self.replicas > 0 or self.has_replica_requirements

    @property
    def gvk(self) -> str:
        return f"{self.api_version}/{self.kind}"


@dataclass(frozen=True, slots=True)
class Headroom:
    """A fit rule for one resource: after the replicas' requests (each times ``request_factor``), keep the
    hold free, hold = max(``percent`` of allocatable, ``floor``); ``strict`` keeps *more* than the hold.

    ``percent=10, floor=250Gi`` is the database scheduler's disk rule, ``percent=10, strict`` its MySQL
    memory rule, ``strict`` alone its CPU rule (``free > request``).
    """

    percent: float = 0.0
    floor: int = 0
    strict: bool = False
    request_factor: int = 1

    def reserve(self, allocatable: int) -> int:
        """The least amount that must stay free, as an integer: ``ceil(hold)`` for ``free - cost >= hold``,
        ``floor(hold) + 1`` for ``free - cost > hold`` (quantities are integers, so both are exact)."""
        # Integer arithmetic in millionths of a percent-unit: a float product of a byte count can round
        # the reserve down; the percentage itself is kept to 4 decimals.
        share = allocatable * round(self.percent * 10_000)
        if self.strict:
            return max(share // 1_000_000, self.floor) + 1
        return max(-(-share // 1_000_000), self.floor)

    def cost(self, request: int) -> int:
        """What one replica's ``request`` takes out of the free amount under this rule."""
        return request * self.request_factor


# Every score plugin (scores.score_clusters); a weight for any other name is refused.
SCORE_PLUGINS = frozenset(
    {"ClusterLocality", "LeastAllocated", "MostFreeMemory", "BalancedAllocation", "MoreFreeMemoryRatio"}
)
DEFAULT_SCORE_WEIGHTS: Mapping[str, int] = {
    "ClusterLocality": 1,
    "LeastAllocated": 0,
    "MostFreeMemory": 0,
    "BalancedAllocation": 0,
    "MoreFreeMemoryRatio": 0,
}
# The name the explanation gives the top-level rules (the profile of workloads without a class).
DEFAULT_PROFILE = "default"


def check_score_weights(weights: Mapping[str, int]) -> None:
    """ValueError naming the first unknown score plugin and listing the valid ones."""
    for name in sorted(weights):
        if name not in SCORE_PLUGINS:
            valid = ", ".join(sorted(SCORE_PLUGINS))
            raise ValueError(f"unknown score plugin {name!r}; valid: {valid}")


@dataclass(frozen=True, slots=True)
class ServiceProfile:
    """The fit rules and score weights of one service class (``EngineConfig.profiles``)."""

    score_weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))
    headroom: Mapping[str, Headroom] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Knobs the lead builds from settings (``profiles.engine_config``).

    ``score_weights`` and ``headroom`` are the default profile; ``profiles`` are the service classes'
    (``profile_for``), and ``default_profile`` names the one that replaces the default. ``resource_fit``
    (on by default) filters a cluster where one replica (every replica, for Duplicated) does not fit;
    ``resource_fit=False`` without headroom reproduces Karmada, where ResourceFit acts only with headroom.
    ``disabled_plugins`` takes filter/score names (``TaintToleration``, ``ResourceFit``,
    ``LeastAllocated``...), like Karmada's ``--plugins=-Name``. ``api_enablements_unreported_pass`` lets
    clusters that never reported ``status.apiEnablements`` through the APIEnablement filter (Karmada: they
    fail).
    """

    score_weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))
    headroom: Mapping[str, Headroom] = field(default_factory=dict)
    profiles: Mapping[str, ServiceProfile] = field(default_factory=dict)
    default_profile: str = ""
    resource_fit: bool = True
    disabled_plugins: frozenset[str] = frozenset()
    enable_empty_workload_propagation: bool = False
    api_enablements_unreported_pass: bool = False
    # The profile of a class without one of its own, made once: every binding of a cycle asks for it.
    _unnamed_profile: ServiceProfile = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_unnamed_profile", ServiceProfile(self.score_weights, self.headroom))
        check_score_weights(self.score_weights)
        for name, profile in self.profiles.items():
            try:
                check_score_weights(profile.score_weights)
            except ValueError as exc:
                raise ValueError(f"profile {name!r}: {exc}") from exc
        if self.default_profile and self.default_profile not in self.profiles:
            defined = ", ".join(sorted(self.profiles)) or "none"
            raise ValueError(f"default_profile {self.default_profile!r} names no profile; defined: {defined}")

    def enabled(self, plugin: str) -> bool:
        return plugin not in self.disabled_plugins

    def profile_name(self, service_class: str) -> str:
        """The profile a workload of ``service_class`` gets: its own, else the default one."""
        if service_class in self.profiles:
            return service_class
        return self.default_profile or DEFAULT_PROFILE

    def profile_for(self, service_class: str) -> ServiceProfile:
        named = self.profiles.get(self.profile_name(service_class))
        return named if named is not None else self._unnamed_profile


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
