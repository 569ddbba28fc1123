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
- Per-cluster work (verdict, scores, estimate, explanation entries) is done once per cluster in a
  ``rows.Row``; what reads more of the binding (avoid list, extenders, MostFreeMemory's top) goes on top.
- A ``memo`` (``memo.CycleMemo``, one per scheduler cycle) changes nothing in the result: it only lets the
  bindings of a cycle share their rows, and the explanation entries in them (so results are never mutated).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from federation.model.placement import Strategy
from federation.scheduling import explain
from federation.scheduling.assign import AttemptError, Candidates, assign
from federation.scheduling.cycle_rows import Judges, rows_for
from federation.scheduling.estimator import ReplicaEstimator, bounds, memoized
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
    rerun_filters,
    run_filters,
)
from federation.scheduling.memo import CycleMemo
from federation.scheduling.messages import no_cluster_fit
from federation.scheduling.placed import Placed, SharedEntries, cluster_entries
from federation.scheduling.rows import Row, RowSpec, placements, rejudged
from federation.scheduling.spread import SelectionError, select_best_clusters
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

    ``estimators``: None for Karmada's general estimator under the binding's service-class profile (worked
    out with each cluster's row); given ones are asked per binding instead.
    ``memo``: the scheduler cycle's ``CycleMemo``, shared by the cycle's calls (same result, less work).
    """
    config = config or DEFAULT_CONFIG
    if memo is not None and estimators is not None:
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
    estimators: Sequence[ReplicaEstimator] | None,
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
    estimators: Sequence[ReplicaEstimator] | None,
    memo: CycleMemo | None,
) -> ScheduleResult:
    strategy = binding.placement.strategy()
    overflow = binding.is_workload and strategy in ("DynamicWeight", "Aggregated")
    # ignoredByScheduler resources are the extenders' to judge: the engine's own fit leaves them out.
    judged = scheduler_view(binding, extenders)
    ctx = FilterContext(judged, term, config, overflow_allowed=overflow, strategy=strategy)
    spec = RowSpec(ctx, binding, own_estimate=estimators is None)
    shared = SharedEntries(memo)
    # The filter runs looked up here, at call time: the engine's are the ones tests count.
    judges = Judges(run_filters, rerun_filters)
    rows = _avoided(binding, rows_for(spec, clusters, judges, shared, memo), shared)
    base: dict[str, Any] = {"strategy": strategy, "affinityName": term.affinity_name if term else None}
    if binding.service_class:
        base.update(serviceClass=binding.service_class, profile=config.profile_name(binding.service_class))
    try:
        if extenders:
            rows = _extender_filtered(binding, clusters, rows, extenders, shared)
        if not any(row.passed for row in rows):
            return _no_fit(binding, rows, base)
        extra = extender_scores(binding, _feasible(rows), extenders) if extenders else {}
        bounds = _bounds(binding, spec, rows, estimators, extenders)
        placed = placements(spec, rows, bounds, extra, shared)
        return _place(binding, rows, placed, config, base, strategy)
    except AttemptError as err:
        explanation = {**base, "clusters": cluster_entries(rows)}
        return ScheduleResult(_keep(binding), err.reason, str(err), explanation)


def _feasible(rows: Sequence[Row]) -> list[ClusterSnapshot]:
    """The snapshots of the clusters that passed the filters (what extenders and estimators are asked)."""
    return [row.snapshot for row in rows if row.passed]


def _avoided(binding: BindingInput, rows: list[Row], shared: SharedEntries) -> list[Row]:
    """The avoid list acts as a filter on top of the others, for this binding alone."""
    avoid = binding.avoid
    if not avoid:
        return rows
    return [rejudged(r, _avoid_verdict(r.name), shared) if r.passed and r.name in avoid else r for r in rows]


def _avoid_verdict(cluster: str) -> FilterVerdict:
    return FilterVerdict(cluster, "Avoid", AVOID_REASON, (("Avoid", AVOID_REASON),))


def _extender_filtered(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    rows: list[Row],
    extenders: Sequence[Extender],
    shared: SharedEntries,
) -> list[Row]:
    verdicts = extender_filter(binding, clusters, [row.verdict for row in rows], extenders)
    pairs = zip(rows, verdicts, strict=True)
    return [row if verdict is row.verdict else rejudged(row, verdict, shared) for row, verdict in pairs]


def _no_fit(binding: BindingInput, rows: Sequence[Row], base: dict[str, Any]) -> ScheduleResult:
    verdicts = [row.verdict for row in rows]
    message = no_cluster_fit(len(rows), [v.reason for v in verdicts if v.reason])
    explanation = {**base, "clusters": cluster_entries(rows)}
    if any(v.failures and all(p == "ResourceFit" for p, _ in v.failures) for v in verdicts):
        # A cluster kept out by capacity alone can take the binding once capacity frees up, which no
        # cluster event announces: a capacity shortfall, kept and retried with back-off as Karmada does.
        return ScheduleResult(_keep(binding), "Unschedulable", message, explanation)
    return ScheduleResult((), "NoClusterFit", message, explanation)


def _place(
    binding: BindingInput,
    rows: Sequence[Row],
    placed: Sequence[Placed],
    config: EngineConfig,
    base: dict[str, Any],
    strategy: Strategy,
) -> ScheduleResult:
    explanation: dict[str, Any] = {**base, "clusters": {}}  # filled last; its place in the order is here
    try:
        selected = select_best_clusters(binding.placement, placed, binding.replicas)
    except SelectionError as err:
        explanation["clusters"] = cluster_entries(rows, placed)
        return ScheduleResult(_keep(binding), "SchedulerError", str(err), explanation)
    explanation["selection"] = {"order": [p.name for p in selected]}
    outcome = assign(binding, Candidates(selected, rows), config, strategy)
    explanation["clusters"] = cluster_entries(rows, placed, selected, outcome.replicas)
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


def _bounds(
    binding: BindingInput,
    spec: RowSpec,
    rows: Sequence[Row],
    estimators: Sequence[ReplicaEstimator] | None,
    extenders: Sequence[Extender],
) -> dict[str, int] | None:
    """The binding's own bounds on the rows' estimates: given estimators and extender replicas verbs, by
    minimum (non-workloads take their replicas everywhere); None when the rows' estimates stand alone."""
    if not binding.is_workload:
        return None
    interested = [ExtenderEstimator(e, binding) for e in extenders if e.is_interested(binding)]
    chain = [*(estimators or ()), *interested]
    if not chain:
        return None
    return bounds(chain, _feasible(rows), spec.ctx.binding.resource_request)


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
    grown = _growth(result, previous or {})
    added = {**request, PODS: 1}
    out = list(snapshots)
    for index, snapshot in enumerate(snapshots):
        if snapshot.name not in grown:  # most clusters took nothing: ``in`` is the cheapest look
            continue
        extra = grown[snapshot.name]
        allocating = dict(snapshot.allocating)
        for resource, quantity in added.items():
            allocating[resource] = allocating.get(resource, 0) + quantity * extra
        out[index] = snapshot.with_allocating(allocating)
    return out


def _growth(result: ScheduleResult, own: Mapping[str, int]) -> dict[str, int]:
    """The replicas ``result`` places beyond those the binding holds, per cluster that got more."""
    grown = {}
    for target in result.clusters:
        extra = target.replicas - max(own.get(target.name, 0), 0)
        if extra > 0:
            grown[target.name] = extra
    return grown
