"""Filter plugins (Karmada ``pkg/scheduler/framework/plugins/*`` plus ResourceFit).

Invariants:
- A filter returns ``None`` (pass) or the reason string Karmada uses, which the NoClusterFit message counts.
- Filters run in a fixed order (``FILTER_ORDER``); the first failure is *the* reason for a cluster, but the
  explanation records every filter's verdict.
- TaintToleration, APIEnablement and ResourceFit let a cluster that is already in ``spec.clusters`` pass:
  an existing placement is never dropped by them (eviction is the taint manager's job).
- ResourceFit (beyond Karmada) uses the binding's service-class profile (``FilterContext.profile``); it is
  the only filter whose failure can pass with time alone (capacity frees up), which the engine reports as
  Unschedulable rather than NoClusterFit.
- ClusterAffinity evaluates one term (the observed ``clusterAffinities`` term, or ``clusterAffinity``); for
  DynamicWeight/Aggregated workloads a cluster matching an overflow affinity passes too, with its tier.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from federation.model.placement import ClusterAffinity, ClusterAffinityTerm, Taint, Toleration
from federation.scheduling.estimator import usable_free
from federation.scheduling.types import PODS, BindingInput, ClusterSnapshot, EngineConfig, ServiceProfile

AFFINITY_REASON = "cluster(s) did not match the placement cluster affinity constraint"
API_REASON = "cluster(s) did not have the API resource"
EVICTION_REASON = "cluster(s) is in the process of eviction"
AVOID_REASON = "cluster(s) are on the binding's avoid list"
SPREAD_REASONS = {
    "provider": "cluster(s) did not have provider property",
    "region": "cluster(s) did not have region property",
    "zone": "cluster(s) did not have zones property",
}


@dataclass(frozen=True, slots=True)
class FilterContext:
    """What every filter of one attempt shares: the binding, the affinity term in force, the config, and
    the binding's service-class profile (resolved once per attempt, not per cluster)."""

    binding: BindingInput
    term: ClusterAffinityTerm | None
    config: EngineConfig
    overflow_allowed: bool = False
    profile: ServiceProfile = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "profile", self.config.profile_for(self.binding.service_class))


FilterFn = Callable[[FilterContext, ClusterSnapshot], str | None]


def cluster_matches(affinity: ClusterAffinity, cluster: ClusterSnapshot) -> bool:
    """Karmada ``util.ClusterMatches`` over a snapshot."""
    return affinity.matches_cluster(
        cluster.name, cluster.labels, provider=cluster.provider, region=cluster.region, zones=cluster.zones
    )


def overflow_order(ctx: FilterContext, cluster: ClusterSnapshot) -> int | None:
    """0 for the primary term, i+1 for ``overflowAffinities[i]``, None when nothing matches."""
    if ctx.term is None or cluster_matches(ctx.term, cluster):
        return 0
    if ctx.overflow_allowed:
        for index, overflow in enumerate(ctx.term.overflow_affinities or ()):
            if cluster_matches(overflow, cluster):
                return index + 1
    return None


def cluster_affinity(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    return None if overflow_order(ctx, cluster) is not None else AFFINITY_REASON


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """First NoSchedule/NoExecute taint no toleration tolerates (``FindMatchingUntoleratedTaint``)."""
    for taint in taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def taint_toleration(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    if cluster.name in ctx.binding.previous:
        return None
    taint = untolerated(cluster.taints, ctx.binding.placement.tolerations())
    # kube-scheduler's wording: `{key: value}`, e.g. `{cluster.karmada.io/not-ready: }`.
    return None if taint is None else f"cluster(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"


def api_enablement(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    if cluster.name in ctx.binding.previous:
        return None
    if cluster.api_enablements is None:
        return None if ctx.config.api_enablements_unreported_pass else API_REASON
    return None if ctx.binding.gvk in cluster.api_enablements else API_REASON


def spread_constraint(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    present = {
        "provider": bool(cluster.provider),
        "region": bool(cluster.region),
        "zone": bool(cluster.zones),
    }
    for constraint in ctx.binding.placement.spreads():
        field = constraint.spread_by_field or ""
        if field in present and not present[field]:
            return SPREAD_REASONS[field]
    return None


def cluster_eviction(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    return EVICTION_REASON if cluster.name in ctx.binding.eviction_clusters else None


def resource_fit(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    """Beyond Karmada: one replica (all of them for Duplicated) must fit, kube-scheduler's NodeResourcesFit
    lifted to clusters, under the rules (headroom) of the binding's profile.

    Every resource the replica requests and one pod slot are checked: ``free >= request``, or the rule's
    inequality when the profile has one for that resource. A resource with a rule is checked even when
    not requested (the class's predicate: a cluster past its hold is no place for it). With
    ``resource_fit`` off the filter acts only when the profile has rules: without them a full cluster
    stays a candidate and the division reports Unschedulable (keeping the old placement), exactly like
    Karmada. Skipped for non-workloads, for clusters already holding the binding (their own usage is in
    ``allocated``), and for clusters that never reported a resource summary (capacity unknown).
    """
    binding, rules = ctx.binding, ctx.profile.headroom
    if not binding.is_workload or not (ctx.config.resource_fit or rules):
        return None
    if cluster.name in binding.previous or cluster.allocatable is None:
        return None
    count = max(binding.replicas if binding.placement.strategy() == "Duplicated" else 1, 1)
    wanted: Mapping[str, int] = {**binding.resource_request, PODS: 1}
    for resource in sorted({*wanted, *rules}):
        per_replica, rule = wanted.get(resource, 0), rules.get(resource)
        if per_replica <= 0 and rule is None:
            continue
        cost = per_replica if rule is None else rule.cost(per_replica)
        if usable_free(cluster, resource, rules) < cost * count:
            return f"cluster(s) had insufficient {resource}"
    return None


FILTER_ORDER: tuple[tuple[str, FilterFn], ...] = (
    ("ClusterAffinity", cluster_affinity),
    ("TaintToleration", taint_toleration),
    ("APIEnablement", api_enablement),
    ("SpreadConstraint", spread_constraint),
    ("ClusterEviction", cluster_eviction),
    ("ResourceFit", resource_fit),
)


@dataclass(frozen=True, slots=True)
class FilterVerdict:
    """Per cluster: the first failing plugin and its reason (None when it passed), plus every failure."""

    cluster: str
    plugin: str | None = None
    reason: str | None = None
    failures: tuple[tuple[str, str], ...] = ()
    overflow_order: int = 0

    @property
    def passed(self) -> bool:
        return self.plugin is None


def personal_clusters(binding: BindingInput) -> frozenset[str]:
    """Clusters whose verdict reads the binding's own lists (``previous``, ``eviction_clusters``): never
    memoized, so ``memo_key`` need not hold those lists."""
    return frozenset(binding.previous) | binding.eviction_clusters


def memo_key(ctx: FilterContext, config_id: int) -> Hashable | None:
    """Everything of ``ctx`` that ``run_filters`` reads for a cluster outside ``personal_clusters``: with
    the same key and the same snapshot, the verdict is the same (``memo.CycleMemo``). ``config_id`` is the
    memo's pin of ``ctx.config`` (the profile follows from it and the service class).

    The placement is keyed whole, by value (its JSON), though the filters read only its affinity term,
    tolerations, spread constraints and strategy: a finer key than needed is never wrong. None (do not
    memoize) when the placement does not serialize.
    """
    binding = ctx.binding
    try:
        placement = binding.placement.model_dump_json()
        term = ctx.term.model_dump_json() if ctx.term is not None else None
    except ValueError:  # pydantic's serialization error: an extra field JSON cannot hold
        return None
    strategy = binding.placement.strategy()
    # resource_fit checks one replica, or all of them for Duplicated.
    count = max(binding.replicas if strategy == "Duplicated" else 1, 1)
    request = tuple(sorted(binding.resource_request.items()))
    return (
        "filters",
        config_id,
        placement,
        term,
        ctx.overflow_allowed,
        binding.gvk,
        binding.service_class,
        binding.is_workload,
        count,
        request,
    )


def run_filters(ctx: FilterContext, cluster: ClusterSnapshot) -> FilterVerdict:
    failures = tuple(
        (name, reason)
        for name, fn in FILTER_ORDER
        if ctx.config.enabled(name) and (reason := fn(ctx, cluster)) is not None
    )
    if failures:
        return FilterVerdict(cluster.name, failures[0][0], failures[0][1], failures)
    return FilterVerdict(cluster.name, overflow_order=overflow_order(ctx, cluster) or 0)
