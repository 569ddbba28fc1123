"""The placement engine: ``schedule(binding, clusters, config, extenders) -> ScheduleResult``.

Pipeline per attempt (Karmada ``generic_scheduler.Schedule``): drop deleting clusters → filters (+ extender
filters) → scores (+ extender priorities) → capacity estimate → spread selection → replica assignment.

Invariants:
- Pure: same inputs, same output (no clock, no randomness, no I/O except through the given extenders).
- ``clusterAffinities``: start at the observed term (term 0 when none or when a reschedule was triggered),
  fall through to the next term on any failure, never move back by itself; if all fail, a FitError of
  the first attempt gives NoClusterFit (clusters cleared), anything else keeps the previous placement.
  A FitError where some cluster failed ResourceFit alone is a capacity shortfall: Unschedulable (kept,
  retried with back-off), since capacity frees up without a cluster event.
- The avoid list acts as a filter; when the attempt fails with it, the engine retries without it and says
  so (``avoid_ignored``).
- Results list clusters sorted by name, zero-replica entries dropped for workloads (unless
  ``enable_empty_workload_propagation``).
- A ``memo`` (``memo.CycleMemo``, one per scheduler cycle) changes nothing in the result: it only lets the
  bindings of a cycle share the per-cluster work that does not read their own lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from federation.scheduling import explain
from federation.scheduling.assign import AttemptError, Candidates, assign
from federation.scheduling.estimator import GeneralEstimator, ReplicaEstimator, estimate, memoized
from federation.scheduling.extender import Extender
from federation.scheduling.extenders_run import (
    ExtenderEstimator,
    extender_filter,
    extender_scores,
    scheduler_view,
)
from federation.scheduling.filters import (
    AVOID_REASON,
    FilterContext,
    FilterVerdict,
    memo_key,
    personal_clusters,
    run_filters,
)
from federation.scheduling.memo import CycleMemo
from federation.scheduling.messages import no_cluster_fit
from federation.scheduling.scores import score_clusters
from federation.scheduling.spread import ClusterInfo, SelectionError, select_best_clusters
from federation.scheduling.types import (
    PODS,
    BindingInput,
    ClusterSnapshot,
    EngineConfig,
    Resources,
    ScheduleResult,
    TargetCluster,
)

SUCCESS_MESSAGE = "Binding has been scheduled successfully."
# One default config for every call without one: a memo keys on the config object, so a fresh default per
# call would never hit (configs are frozen values; sharing one changes nothing else).
DEFAULT_CONFIG = EngineConfig()


def schedule(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    config: EngineConfig | None = None,
    extenders: Sequence[Extender] = (),
    estimators: Sequence[ReplicaEstimator] | None = None,
    *,
    memo: CycleMemo | None = None,
) -> ScheduleResult:
    """Decide ``spec.clusters`` for one binding against a snapshot of the member clusters.

    ``memo``: the scheduler cycle's ``CycleMemo``, shared by the cycle's calls (same result, less work).
    """
    config = config or DEFAULT_CONFIG
    if estimators is None:  # the general estimator under the rules of the binding's service class
        estimators = [GeneralEstimator(config.profile_for(binding.service_class).headroom)]
    if memo is not None:
        estimators = memoized(estimators, memo)
    live = [c for c in clusters if not c.deleting]
    result = _over_terms(binding, live, config, extenders, estimators, memo)
    if result.succeeded or not binding.avoid:
        return result
    retry = _over_terms(replace(binding, avoid=frozenset()), live, config, extenders, estimators, memo)
    if not retry.succeeded:
        return result
    note = (
        f"{retry.message} The avoid list ({', '.join(sorted(binding.avoid))}) was ignored: nothing else fits."
    )
    explanation = {**retry.explanation, "avoidIgnored": True}
    return replace(retry, message=note, avoid_ignored=True, explanation=explanation)


def _over_terms(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    config: EngineConfig,
    extenders: Sequence[Extender],
    estimators: Sequence[ReplicaEstimator],
    memo: CycleMemo | None,
) -> ScheduleResult:
    terms = binding.placement.affinity_terms()
    if not binding.placement.cluster_affinities:
        return _attempt(binding, clusters, terms[0] if terms else None, config, extenders, estimators, memo)
    names = [t.affinity_name for t in terms]
    start = (
        0
        if binding.fresh or binding.observed_affinity not in names
        else names.index(binding.observed_affinity)
    )
    attempts: list[ScheduleResult] = []
    for term in terms[start:]:
        result = _attempt(binding, clusters, term, config, extenders, estimators, memo)
        attempts.append(result)
        if result.succeeded:
            return _with_attempts(replace(result, affinity_name=term.affinity_name), attempts)
    first = attempts[0]
    kept = binding.observed_affinity or None
    if first.result == "NoClusterFit":
        return _with_attempts(replace(first, clusters=(), affinity_name=kept), attempts)
    return _with_attempts(replace(first, affinity_name=kept), attempts)


def _with_attempts(result: ScheduleResult, attempts: Sequence[ScheduleResult]) -> ScheduleResult:
    history = [
        {"affinityName": a.explanation.get("affinityName"), "result": a.result, "message": a.message}
        for a in attempts
    ]
    return replace(result, explanation={**result.explanation, "attempts": history})


def _attempt(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    term: Any,
    config: EngineConfig,
    extenders: Sequence[Extender],
    estimators: Sequence[ReplicaEstimator],
    memo: CycleMemo | None,
) -> ScheduleResult:
    strategy = binding.placement.strategy()
    overflow = binding.is_workload and strategy in ("DynamicWeight", "Aggregated")
    # ignoredByScheduler resources are the extenders' to judge: the engine's own fit leaves them out.
    ctx = FilterContext(scheduler_view(binding, extenders), term, config, overflow_allowed=overflow)
    verdicts = _verdicts(ctx, clusters, memo)
    base: dict[str, Any] = {"strategy": strategy, "affinityName": term.affinity_name if term else None}
    if binding.service_class:
        base.update(serviceClass=binding.service_class, profile=config.profile_name(binding.service_class))
    try:
        verdicts = extender_filter(binding, clusters, verdicts, extenders)
        feasible = [c for c, v in zip(clusters, verdicts, strict=True) if v.passed]
        if not feasible:
            return _no_fit(binding, len(clusters), verdicts, base, memo)
        extra = extender_scores(binding, feasible, extenders)
        return _place(binding, feasible, verdicts, config, extenders, estimators, extra, base, memo)
    except AttemptError as err:
        explanation = {**base, "clusters": explain.cluster_entries(verdicts, {}, {}, {}, memo)}
        return ScheduleResult(_keep(binding), err.reason, str(err), explanation)


def _verdicts(
    ctx: FilterContext, clusters: Sequence[ClusterSnapshot], memo: CycleMemo | None
) -> list[FilterVerdict]:
    key = None if memo is None else memo_key(ctx, memo.pin(ctx.config))
    if memo is None or key is None:
        own = [run_filters(ctx, c) for c in clusters]
    else:
        own = memo.per_cluster(key, clusters, lambda c: run_filters(ctx, c), personal_clusters(ctx.binding))
    avoid = ctx.binding.avoid
    if not avoid:
        return own
    return [_avoided(v) if v.passed and v.cluster in avoid else v for v in own]


def _avoided(verdict: FilterVerdict) -> FilterVerdict:
    """The avoid list acts as a filter on top of the others, for this binding alone."""
    return FilterVerdict(verdict.cluster, "Avoid", AVOID_REASON, (("Avoid", AVOID_REASON),))


def _no_fit(
    binding: BindingInput,
    total: int,
    verdicts: Sequence[FilterVerdict],
    base: dict[str, Any],
    memo: CycleMemo | None,
) -> ScheduleResult:
    message = no_cluster_fit(total, [v.reason for v in verdicts if v.reason])
    explanation = {**base, "clusters": explain.cluster_entries(verdicts, {}, {}, {}, memo)}
    if any(v.failures and all(p == "ResourceFit" for p, _ in v.failures) for v in verdicts):
        # A cluster kept out by capacity alone can take the binding once capacity frees up, which no
        # cluster event announces: a capacity shortfall, kept and retried with back-off as Karmada does.
        return ScheduleResult(_keep(binding), "Unschedulable", message, explanation)
    return ScheduleResult((), "NoClusterFit", message, explanation)


def _place(
    binding: BindingInput,
    feasible: Sequence[ClusterSnapshot],
    verdicts: Sequence[FilterVerdict],
    config: EngineConfig,
    extenders: Sequence[Extender],
    estimators: Sequence[ReplicaEstimator],
    extra: Mapping[str, Mapping[str, tuple[int, int]]],
    base: dict[str, Any],
    memo: CycleMemo | None,
) -> ScheduleResult:
    scores = score_clusters(binding, feasible, config, extra, memo)
    allocatable = _allocatable(binding, feasible, estimators, extenders)
    available = {n: a + max(binding.previous.get(n, 0), 0) for n, a in allocatable.items()}
    tiers = {v.cluster: v.overflow_order for v in verdicts if v.passed}
    infos = [
        ClusterInfo(c.name, scores[c.name].total, available[c.name], c.region, tiers.get(c.name, 0))
        for c in feasible
    ]
    entries = explain.cluster_entries(verdicts, scores, allocatable, available, memo)
    explanation: dict[str, Any] = {**base, "clusters": entries}
    try:
        selected = select_best_clusters(binding.placement, infos, binding.replicas)
    except SelectionError as err:
        return ScheduleResult(_keep(binding), "SchedulerError", str(err), explanation)
    explanation["selection"] = {"order": [i.name for i in selected]}
    by_name = {c.name: c for c in feasible}
    outcome = assign(binding, Candidates(selected, allocatable, by_name), config)
    explain.mark_result(entries, [i.name for i in selected], outcome.replicas)
    explanation["division"] = explain.plain(outcome.trace)
    return _finish(binding, outcome.targets, outcome.unplaced, outcome.message, explanation)


def _finish(
    binding: BindingInput,
    targets: tuple[TargetCluster, ...] | None,
    unplaced: int,
    message: str,
    explanation: dict[str, Any],
) -> ScheduleResult:
    if targets is None:  # capacity short: Karmada keeps the old placement
        return ScheduleResult(_keep(binding), "Unschedulable", message, explanation, unplaced=unplaced)
    text = f"{SUCCESS_MESSAGE} {message}".strip() if message else SUCCESS_MESSAGE
    return ScheduleResult(targets, "Success", text, explanation, unplaced=unplaced)


def _allocatable(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    estimators: Sequence[ReplicaEstimator],
    extenders: Sequence[Extender],
) -> dict[str, int]:
    """Extra replicas per cluster: min over estimators and extender replicas verbs (non-workloads skip)."""
    if not binding.is_workload:
        return {c.name: binding.replicas for c in clusters}
    chain = [*estimators, *(ExtenderEstimator(e, binding) for e in extenders if e.is_interested(binding))]
    return estimate(chain, clusters, scheduler_view(binding, extenders).resource_request, binding.replicas)


def _keep(binding: BindingInput) -> tuple[TargetCluster, ...]:
    return tuple(TargetCluster(n, r) for n, r in sorted(binding.previous.items()))


def assume(
    snapshots: Sequence[ClusterSnapshot],
    result: ScheduleResult,
    request: Resources,
    previous: Mapping[str, int] | None = None,
) -> list[ClusterSnapshot]:
    """Snapshots with the newly placed replicas' requests added to ``allocating`` (batch scheduling).

    Only the growth over ``previous`` is added: replicas already running are in ``allocated``.
    """
    if not result.succeeded:
        return list(snapshots)
    growth = {t.name: t.replicas - max((previous or {}).get(t.name, 0), 0) for t in result.clusters}
    out = []
    for snapshot in snapshots:
        extra = growth.get(snapshot.name, 0)
        if extra <= 0:
            out.append(snapshot)
            continue
        allocating = dict(snapshot.allocating)
        for resource, quantity in {**request, PODS: 1}.items():
            allocating[resource] = allocating.get(resource, 0) + quantity * extra
        out.append(replace(snapshot, allocating=allocating))
    return out
