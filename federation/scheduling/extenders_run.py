"""How the scheduler drives extenders: filter, prioritize, replicas and bind, with kube-scheduler's rules.

Invariants:
- Only extenders interested in the binding (``managedResources``) are called, in configuration order, each
  on the clusters that are still feasible.
- An ``ExtenderError`` from a non-ignorable extender fails the attempt with SchedulerError; an ignorable
  extender's failure is skipped (its filter keeps every cluster, its scores and bounds count for nothing).
- A cluster an extender rejects is reported with the extender's reason (``failedAndUnresolvableClusters``
  first, then ``failedClusters``), or a generic one naming the extender.
- Bind (kube-scheduler's ``extendersBinding``) follows a successful decision only: the first binder
  interested in the binding is told every target; its error turns the decision into a SchedulerError that
  keeps the previous placement (so nothing is written and the binding is retried with back-off), unless it
  is ignorable, when the next binder is asked (kube-scheduler's current rule). A plan never binds.
- ``ignoredByScheduler`` resources of any extender are left out of the request the engine's own fit and
  estimator judge (kube-scheduler hands them to NodeResourcesFit as ignored); extenders see the whole request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from federation.scheduling.assign import AttemptError
from federation.scheduling.extender import MAX_EXTENDER_PRIORITY, Extender, ExtenderError
from federation.scheduling.filters import FilterVerdict
from federation.scheduling.types import (
    BindingInput,
    ClusterSnapshot,
    Resources,
    ScheduleResult,
    TargetCluster,
)

SCORE_SCALE = 100 // MAX_EXTENDER_PRIORITY


def _fail(extender: Extender, verb: str, err: ExtenderError) -> AttemptError:
    return AttemptError(f"extender {extender.name} failed to {verb}: {err}", "SchedulerError")


def extender_filter(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    verdicts: Sequence[FilterVerdict],
    extenders: Sequence[Extender],
) -> list[FilterVerdict]:
    out = list(verdicts)
    for extender in extenders:
        passing = [c for c, v in zip(clusters, out, strict=True) if v.passed]
        if not passing or not extender.is_interested(binding):
            continue
        try:
            answer = extender.filter(binding, passing)
        except ExtenderError as err:
            if extender.ignorable:
                continue
            raise _fail(extender, "filter", err) from err
        keep = set(answer.cluster_names)
        plugin = f"Extender({extender.name})"
        for index, verdict in enumerate(out):
            if verdict.passed and verdict.cluster not in keep:
                reason = answer.failed_unresolvable.get(verdict.cluster) or answer.failed.get(
                    verdict.cluster, f"cluster(s) were rejected by extender {extender.name}"
                )
                out[index] = FilterVerdict(verdict.cluster, plugin, reason, ((plugin, reason),))
    return out


def extender_scores(
    binding: BindingInput, clusters: Sequence[ClusterSnapshot], extenders: Sequence[Extender]
) -> dict[str, dict[str, tuple[int, int]]]:
    parts: dict[str, dict[str, tuple[int, int]]] = {c.name: {} for c in clusters}
    for extender in extenders:
        if not extender.weight or not extender.is_interested(binding):
            continue
        try:
            priorities = extender.prioritize(binding, clusters)
        except ExtenderError as err:
            if extender.ignorable:
                continue
            raise _fail(extender, "prioritize", err) from err
        for priority in priorities:
            if priority.host in parts:
                score = priority.score * SCORE_SCALE
                parts[priority.host][f"Extender({extender.name})"] = (score, extender.weight)
    return parts


class ExtenderEstimator:
    """Adapts an extender's replicas verb to ``ReplicaEstimator`` for one binding."""

    __slots__ = ("binding", "extender")

    def __init__(self, extender: Extender, binding: BindingInput) -> None:
        self.extender = extender
        self.binding = binding

    def max_available_replicas(
        self, clusters: Sequence[ClusterSnapshot], request: Resources
    ) -> Mapping[str, int]:
        try:
            return self.extender.max_replicas(self.binding, clusters) or {}
        except ExtenderError as err:
            if self.extender.ignorable:
                return {}
            raise _fail(self.extender, "estimate replicas", err) from err


def scheduler_view(binding: BindingInput, extenders: Sequence[Extender]) -> BindingInput:
    """The binding as the engine's own fit and estimator judge it: no ``ignoredByScheduler`` resources."""
    if not extenders:  # the usual case, spared building an empty set per binding
        return binding
    ignored = frozenset[str]().union(*(e.ignored_resources for e in extenders))
    if not ignored & binding.resource_request.keys():
        return binding
    request = {r: q for r, q in binding.resource_request.items() if r not in ignored}
    return replace(binding, resource_request=request)


def extenders_bind(
    binding: BindingInput, result: ScheduleResult, extenders: Sequence[Extender]
) -> ScheduleResult:
    """Tell the binder extender a successful decision before it is written (see the module invariants)."""
    if not result.succeeded:
        return result
    for extender in extenders:
        if not extender.binder or not extender.is_interested(binding):
            continue
        failure = _bind_targets(extender, binding, result.clusters)
        if failure is None:
            return result  # unchanged: the decision a plan shows is the one written
        if not extender.ignorable:
            return _bind_failed(binding, result, extender, *failure)
    return result


def _bind_targets(
    extender: Extender, binding: BindingInput, targets: Sequence[TargetCluster]
) -> tuple[TargetCluster, ExtenderError] | None:
    """Bind every target in order; the first one that failed, with its error."""
    for target in targets:
        try:
            extender.bind(binding, target)
        except ExtenderError as err:
            return target, err
    return None


def _bind_failed(
    binding: BindingInput,
    result: ScheduleResult,
    extender: Extender,
    target: TargetCluster,
    err: ExtenderError,
) -> ScheduleResult:
    workload = f"{binding.namespace}/{binding.name}" if binding.namespace else binding.name
    message = f"extender {extender.name} failed to bind {workload} to cluster {target.name}: {err}"
    failed = {"extender": extender.name, "cluster": target.name, "error": str(err)}
    kept = tuple(TargetCluster(n, r) for n, r in sorted(binding.previous.items()))
    explanation = {**result.explanation, "bind": failed}
    return ScheduleResult(kept, "SchedulerError", message, explanation, binding.observed_affinity or None)
