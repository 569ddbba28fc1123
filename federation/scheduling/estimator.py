"""Replica capacity estimation: how many *more* replicas each cluster can take.

Karmada's general estimator (``pkg/estimator/client/general.go``):
- ``allowedPods = allocatable.pods - allocated.pods - allocating.pods``, 0 when not positive.
- For each requested resource with a positive quantity:
  ``floor((allocatable - allocated - allocating) / request)``; a resource missing from
  allocatable gives 0. CPU is compared in milli-units (our base unit already).
- The answer is the minimum of those and ``allowedPods``; no resourceSummary gives 0; no request gives
  allowedPods.

Headroom rules (beyond Karmada, the binding's service-class profile) subtract a reserve from allocatable
before the division and divide by the rule's per-replica cost (``request_factor`` times the request); a
resource with a rule that the replica does not request still bounds the answer to 0 when the cluster is
already past its hold (the rule is the class's predicate, request or not).
Estimators combine by minimum (Karmada runs the general one and an optional accurate one per cluster);
a result of ``UNBOUNDED`` (Karmada's MaxInt32) is clamped to the binding's replicas by the caller.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol

from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import PODS, ClusterSnapshot, Headroom, Resources

UNBOUNDED = 2**31 - 1


class ReplicaEstimator(Protocol):
    """Maximum number of additional replicas per cluster (a per-cluster service can implement it)."""

    def max_available_replicas(
        self, clusters: Sequence[ClusterSnapshot], request: Resources
    ) -> Mapping[str, int]: ...


def allowed_pods(cluster: ClusterSnapshot, headroom: Mapping[str, Headroom] | None = None) -> int:
    """Pods the cluster can still start (``getAllowedPodNumber``), never negative."""
    return max(0, usable_free(cluster, PODS, headroom))


def usable_free(
    cluster: ClusterSnapshot, resource: str, headroom: Mapping[str, Headroom] | None = None
) -> int:
    """Free amount of ``resource`` after keeping its headroom; may be negative when over-committed."""
    allocatable = cluster.allocatable
    if allocatable is None:
        return 0
    # ``cluster.free(resource)``, spelled out: a row's fit check and estimate ask for it a few times each.
    total = allocatable.get(resource, 0)
    free = total - (cluster.allocated.get(resource, 0) + cluster.allocating.get(resource, 0))
    rule = headroom.get(resource) if headroom else None
    if rule is not None:
        free -= rule.reserve(total)
    return free


def general_max_replicas(
    cluster: ClusterSnapshot, request: Resources, headroom: Mapping[str, Headroom] | None = None
) -> int:
    """Karmada's general estimate for one cluster (with optional headroom rules)."""
    allocatable = cluster.allocatable
    if allocatable is None:
        return 0
    if headroom:
        return _estimate_with_headroom(cluster, allocatable, request, headroom)
    # Without rules, ``usable_free`` spelled out: a scheduler cycle estimates every new snapshot's clusters.
    allocated, allocating = cluster.allocated, cluster.allocating
    result = max(0, allocatable.get(PODS, 0) - (allocated.get(PODS, 0) + allocating.get(PODS, 0)))
    for resource, quantity in request.items():
        if quantity <= 0 or resource == PODS:
            continue
        if resource not in allocatable:
            return 0
        free = allocatable[resource] - (allocated.get(resource, 0) + allocating.get(resource, 0))
        result = min(result, max(0, free) // quantity)
    return result


def _estimate_with_headroom(
    cluster: ClusterSnapshot, allocatable: Resources, request: Resources, rules: Mapping[str, Headroom]
) -> int:
    result = allowed_pods(cluster, rules)
    for resource, quantity in request.items():
        if quantity <= 0 or resource == PODS:
            continue
        if resource not in allocatable:
            return 0
        rule = rules.get(resource)
        cost = quantity if rule is None else rule.cost(quantity)
        result = min(result, max(0, usable_free(cluster, resource, rules)) // cost)
    for resource in rules:
        if request.get(resource, 0) <= 0 and usable_free(cluster, resource, rules) < 0:
            return 0
    return result


class GeneralEstimator:
    """The default ``ReplicaEstimator``: Karmada's general estimator, optionally keeping headroom."""

    __slots__ = ("headroom",)

    def __init__(self, headroom: Mapping[str, Headroom] | None = None) -> None:
        self.headroom = dict(headroom or {})

    def max_available_replicas(
        self, clusters: Sequence[ClusterSnapshot], request: Resources
    ) -> Mapping[str, int]:
        return {c.name: general_max_replicas(c, request, self.headroom) for c in clusters}


def memo_key(request: Resources, headroom: Mapping[str, Headroom]) -> Hashable:
    """All that ``general_max_replicas`` reads besides the snapshot (quantities are ints, rules frozen)."""
    return ("general-estimate", tuple(sorted(request.items())), tuple(sorted(headroom.items())))


class MemoizedGeneralEstimator:
    """``GeneralEstimator`` answering from a cycle's memo: ``general_max_replicas`` reads only the snapshot,
    the request and the headroom rules, which make the key (quantities are ints, rules frozen values)."""

    __slots__ = ("headroom", "memo")

    def __init__(self, estimator: GeneralEstimator, memo: CycleMemo) -> None:
        self.headroom = estimator.headroom
        self.memo = memo

    def max_available_replicas(
        self, clusters: Sequence[ClusterSnapshot], request: Resources
    ) -> Mapping[str, int]:
        headroom = self.headroom
        key = memo_key(request, headroom)
        answers = self.memo.per_cluster(key, clusters, lambda c: general_max_replicas(c, request, headroom))
        return {c.name: answer for c, answer in zip(clusters, answers, strict=True)}


def memoized(estimators: Sequence[ReplicaEstimator], memo: CycleMemo) -> list[ReplicaEstimator]:
    """``estimators`` with each plain ``GeneralEstimator`` answering from ``memo``; any other estimator (a
    subclass, a service, an extender) is asked every time, since its answers may depend on more."""
    return [MemoizedGeneralEstimator(e, memo) if type(e) is GeneralEstimator else e for e in estimators]


def estimate(
    estimators: Sequence[ReplicaEstimator],
    clusters: Sequence[ClusterSnapshot],
    request: Resources,
    replicas: int,
) -> dict[str, int]:
    """Minimum over estimators per cluster; a cluster no estimator bounded is clamped to ``replicas``."""
    return {name: clamp(value, replicas) for name, value in bounds(estimators, clusters, request).items()}


def bounds(
    estimators: Sequence[ReplicaEstimator], clusters: Sequence[ClusterSnapshot], request: Resources
) -> dict[str, int]:
    """Minimum over estimators' answers per cluster (negative answers ignored), ``UNBOUNDED`` where none
    answered: ``estimate`` before the clamp, so that answers of several sources combine by ``min``."""
    result = {c.name: UNBOUNDED for c in clusters}
    for estimator in estimators:
        answers = estimator.max_available_replicas(clusters, request)
        for name, value in answers.items():
            if name in result and value >= 0:
                result[name] = min(result[name], value)
    return result


def clamp(bound: int, replicas: int) -> int:
    """A cluster's estimate from its bound: ``replicas`` when nothing bounded it (Karmada's MaxInt32)."""
    return replicas if bound == UNBOUNDED else bound
