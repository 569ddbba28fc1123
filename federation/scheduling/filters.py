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
- Of the binding's own lists a filter reads only whether the cluster is in them (``previous``,
  ``eviction_clusters``): verdicts are shared by the bindings that give a cluster the same membership.
- Of a snapshot's allocation (``allocated``, ``allocating``) only the filters in ``READS_ALLOCATION`` read
  anything (ResourceFit): for a snapshot that differs from an earlier one in allocating alone,
  ``rerun_filters`` runs them again and takes the others' verdicts over, which is what ``run_filters`` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from federation.model.base import frozen_json
from federation.model.placement import ClusterAffinity, ClusterAffinityTerm, Strategy, Taint, Toleration
from federation.scheduling.estimator import usable_free
from federation.scheduling.types import (
    PODS,
    BindingInput,
    ClusterSnapshot,
    EngineConfig,
    Headroom,
    ServiceProfile,
)

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
    what the filters would otherwise work out again for every cluster: the binding's service-class profile,
    the enabled filters (and those of them that read the allocation), the binding's kind key, tolerations,
    spread fields, resource-fit checks and the replicas they check at once (all of them for Duplicated,
    else one)."""

    binding: BindingInput
    term: ClusterAffinityTerm | None
    config: EngineConfig
    overflow_allowed: bool = False
    strategy: Strategy | None = None  # the placement's (``Placement.strategy``), worked out when not given
    profile: ServiceProfile = field(init=False)
    enabled: tuple[tuple[str, FilterFn], ...] = field(init=False)
    gvk: str = field(init=False)
    tolerations: tuple[Toleration, ...] = field(init=False)
    spread_fields: tuple[str, ...] = field(init=False)
    fit_checks: tuple[FitCheck, ...] | None = field(init=False)
    allocation_filters: tuple[tuple[str, FilterFn], ...] = field(init=False)
    replica_count: int = field(init=False)

    def __post_init__(self) -> None:
        binding, config = self.binding, self.config
        profile = config.profile_for(binding.service_class)
        if self.strategy is None:
            object.__setattr__(self, "strategy", binding.placement.strategy())
        count = max(binding.replicas if self.strategy == "Duplicated" else 1, 1)
        disabled = config.disabled_plugins
        enabled, allocation_filters = _enabled(frozenset(disabled)) if disabled else _ALL_ENABLED
        derive = object.__setattr__  # frozen: the derived fields are set once, here
        derive(self, "profile", profile)
        derive(self, "enabled", enabled)
        derive(self, "allocation_filters", allocation_filters)
        derive(self, "gvk", binding.gvk)
        derive(self, "tolerations", binding.placement.tolerations())
        derive(self, "spread_fields", tuple(c.spread_by_field or "" for c in binding.placement.spreads()))
        derive(self, "fit_checks", fit_checks(binding, config, profile, count))
        derive(self, "replica_count", count)


@lru_cache(maxsize=64)
def _enabled(
    disabled: frozenset[str],
) -> tuple[tuple[tuple[str, FilterFn], ...], tuple[tuple[str, FilterFn], ...]]:
    """The enabled filters in order, and those of them that read the allocation (``READS_ALLOCATION``)."""
    enabled = tuple(pair for pair in FILTER_ORDER if pair[0] not in disabled)
    return enabled, tuple(pair for pair in enabled if pair[0] in READS_ALLOCATION)


@dataclass(frozen=True, slots=True)
class FitCheck:
    """One resource ResourceFit checks: what must stay free of it for the binding's replicas."""

    resource: str
    need: int
    reason: str


def fit_checks(
    binding: BindingInput, config: EngineConfig, profile: ServiceProfile, count: int
) -> tuple[FitCheck, ...] | None:
    """ResourceFit's checks for ``count`` replicas of the binding at once (see ``resource_fit``), in resource
    order; None when the filter does not act on it."""
    rules = profile.headroom
    if not binding.is_workload or not (config.resource_fit or rules):
        return None
    return _fit_checks(count, tuple(sorted(binding.resource_request.items())), tuple(sorted(rules.items())))


@lru_cache(maxsize=1024)
def _fit_checks(
    count: int, request: tuple[tuple[str, int], ...], headroom: tuple[tuple[str, Headroom], ...]
) -> tuple[FitCheck, ...]:
    """The checks for ``count`` replicas of ``request`` under the ``headroom`` rules, made once for the many
    bindings that share them (quantities are ints, rules frozen values)."""
    wanted: Mapping[str, int] = {**dict(request), PODS: 1}
    rules = dict(headroom)
    checks = []
    for resource in sorted({*wanted, *rules}):
        per_replica, rule = wanted.get(resource, 0), rules.get(resource)
        if per_replica <= 0 and rule is None:
            continue
        cost = per_replica if rule is None else rule.cost(per_replica)
        checks.append(FitCheck(resource, cost * count, f"cluster(s) had insufficient {resource}"))
    return tuple(checks)


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
    if not cluster.taints:
        return None
    taint = untolerated(cluster.taints, ctx.tolerations)
    # kube-scheduler's wording: `{key: value}`, e.g. `{cluster.karmada.io/not-ready: }`.
    return None if taint is None else f"cluster(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"


def api_enablement(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    if cluster.name in ctx.binding.previous:
        return None
    if cluster.api_enablements is None:
        return None if ctx.config.api_enablements_unreported_pass else API_REASON
    return None if ctx.gvk in cluster.api_enablements else API_REASON


def spread_constraint(ctx: FilterContext, cluster: ClusterSnapshot) -> str | None:
    for field_name in ctx.spread_fields:
        if field_name in SPREAD_REASONS and not _has_field(cluster, field_name):
            return SPREAD_REASONS[field_name]
    return None


def _has_field(cluster: ClusterSnapshot, field_name: str) -> bool:
    if field_name == "provider":
        return bool(cluster.provider)
    if field_name == "region":
        return bool(cluster.region)
    return bool(cluster.zones)


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
    checks = ctx.fit_checks  # what to check, worked out once per attempt (``fit_checks``)
    if checks is None or cluster.name in ctx.binding.previous or cluster.allocatable is None:
        return None
    rules = ctx.profile.headroom
    for check in checks:
        if usable_free(cluster, check.resource, rules) < check.need:
            return check.reason
    return None


FILTER_ORDER: tuple[tuple[str, FilterFn], ...] = (
    ("ClusterAffinity", cluster_affinity),
    ("TaintToleration", taint_toleration),
    ("APIEnablement", api_enablement),
    ("SpreadConstraint", spread_constraint),
    ("ClusterEviction", cluster_eviction),
    ("ResourceFit", resource_fit),
)


# The filters that read a snapshot's allocation (``allocated``, ``allocating``); the others read only what
# ``ClusterSnapshot.same_but_allocating`` holds equal, so ``rerun_filters`` takes their verdicts over.
READS_ALLOCATION = frozenset({"ResourceFit"})
_POSITION = {name: index for index, (name, _) in enumerate(FILTER_ORDER)}
_ALL_ENABLED = _enabled(frozenset())


@dataclass(frozen=True, slots=True)
class FilterVerdict:
    """Per cluster: the first failing plugin and its reason (None when it passed), plus every failure."""

    cluster: str
    plugin: str | None = None
    reason: str | None = None
    failures: tuple[tuple[str, str], ...] = ()
    overflow_order: int = 0
    # Whether no plugin failed: a field, not a property, since every row asks it a few times.
    passed: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", self.plugin is None)


def memo_key(ctx: FilterContext, config_id: int) -> Hashable | None:
    """Everything of ``ctx`` that ``run_filters`` reads for a cluster but whether the cluster is in the
    binding's own lists (its membership, ``cycle_rows.memberships``): with the same key, the same membership
    and the same snapshot, the verdict is the same (``memo.CycleMemo``). ``config_id`` is the memo's pin of
    ``ctx.config`` (the profile follows from it and the service class).

    The placement is keyed whole, by value (its JSON), though the filters read only its affinity term,
    tolerations, spread constraints and strategy: a finer key than needed is never wrong. None (do not
    memoize) when the placement does not serialize.
    """
    binding = ctx.binding
    try:
        placement = frozen_json(binding.placement)
        term = frozen_json(ctx.term) if ctx.term is not None else None
    except ValueError:  # pydantic's serialization error: an extra field JSON cannot hold
        return None
    request = tuple(sorted(binding.resource_request.items()))
    return (
        "filters",
        config_id,
        placement,
        term,
        ctx.overflow_allowed,
        ctx.gvk,
        binding.service_class,
        binding.is_workload,
        ctx.replica_count,  # resource_fit checks one replica, or all of them for Duplicated
        request,
    )


def run_filters(ctx: FilterContext, cluster: ClusterSnapshot) -> FilterVerdict:
    failures = []
    for name, fn in ctx.enabled:
        reason = fn(ctx, cluster)
        if reason is not None:
            failures.append((name, reason))
    if failures:
        return FilterVerdict(cluster.name, failures[0][0], failures[0][1], tuple(failures))
    return passed_verdict(cluster.name, overflow_order(ctx, cluster) or 0)


def rerun_filters(ctx: FilterContext, cluster: ClusterSnapshot, before: FilterVerdict) -> FilterVerdict:
    """``run_filters(ctx, cluster)`` given ``before``, the verdict under the same ``ctx`` and membership for
    an earlier snapshot of the cluster that differs from ``cluster`` in allocating alone: only the filters
    that read the allocation run again; ``before`` itself when nothing changed."""
    if before.passed:  # the usual case, spared building lists: does it still pass?
        for _, fn in ctx.allocation_filters:
            if fn(ctx, cluster) is not None:
                break
        else:
            return before
    kept = [failure for failure in before.failures if failure[0] not in READS_ALLOCATION]
    for name, fn in ctx.allocation_filters:
        reason = fn(ctx, cluster)
        if reason is not None:
            kept.append((name, reason))
    failures = tuple(sorted(kept, key=_position))  # in filter order, as ``run_filters`` finds them
    if failures == before.failures:
        return before
    if failures:
        return FilterVerdict(cluster.name, failures[0][0], failures[0][1], failures)
    return passed_verdict(cluster.name, overflow_order(ctx, cluster) or 0)


def _position(failure: tuple[str, str]) -> int:
    return _POSITION[failure[0]]


@lru_cache(maxsize=4096)
def passed_verdict(cluster: str, overflow_order: int) -> FilterVerdict:
    """A passing verdict: one value per cluster name and tier for every attempt (a scheduler cycle makes one
    for every cluster of every new snapshot, and a frozen value is not cheap to build)."""
    return FilterVerdict(cluster, overflow_order=overflow_order)
