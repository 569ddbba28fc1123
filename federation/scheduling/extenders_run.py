"""How the engine drives extenders: filter, prioritize and replicas, with kube-scheduler's error rules.

Invariants:
- Only extenders interested in the binding (``managedResources``) are called, in configuration order, each
  on the clusters that are still feasible.
- An ``ExtenderError`` from a non-ignorable extender fails the attempt with SchedulerError; an ignorable
  extender's failure is skipped (its filter keeps every cluster, its scores and bounds count for nothing).
- A cluster an extender rejects is reported with the extender's reason (``failedAndUnresolvableClusters``
  first, then ``failedClusters``), or a generic one naming the extender.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from federation.scheduling.assign import AttemptError
from federation.scheduling.extender import MAX_EXTENDER_PRIORITY, Extender, ExtenderError
from federation.scheduling.filters import FilterVerdict
from federation.scheduling.types import BindingInput, ClusterSnapshot, Resources

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
