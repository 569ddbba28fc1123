"""Resource-aware score plugins (beyond Karmada), each 0..100 for one cluster.

Invariants:
- Scores look at the cluster *after* placing one more replica of the binding (kube-scheduler's convention),
  with headroom subtracted from allocatable, so a cluster with room only inside its headroom scores low.
- A cluster without a resource summary scores 0 on every resource plugin (unknown is not attractive).
- LeastAllocated: mean over cpu, memory (and ephemeral-storage when requested) of free/allocatable*100.
  MostFreeMemory: free memory relative to the cluster with the most free memory among the candidates.
  BalancedAllocation: 100 * (1 - spread of the used fractions of cpu and memory), kube's formula.
- MoreFreeMemoryRatio is the database scheduler's MoreMem priority, kept on its own scale: the cluster's
  (free memory / total memory) x 10, truncated to an integer 0..10 like the original's priority, with
  free = allocatable - allocated - allocating as reported (no headroom, no request: the formula as given).
  Its weight (1,000,000 for MySQL in the original) makes it dominate the 0..100 plugins.
"""

from __future__ import annotations

from collections.abc import Mapping

from federation.scheduling.estimator import usable_free
from federation.scheduling.types import CPU, EPHEMERAL_STORAGE, MEMORY, ClusterSnapshot, Headroom, Resources

MAX_SCORE = 100


def _fraction_free(
    cluster: ClusterSnapshot, resource: str, request: Resources, headroom: Mapping[str, Headroom]
) -> float | None:
    """Free share of ``resource`` after one more replica, in [0, 1]; None when the cluster lacks it."""
    if cluster.allocatable is None or cluster.allocatable.get(resource, 0) <= 0:
        return None
    total = cluster.allocatable[resource]
    free = usable_free(cluster, resource, headroom) - request.get(resource, 0)
    return min(1.0, max(0.0, free / total))


def _scored_resources(request: Resources) -> tuple[str, ...]:
    if request.get(EPHEMERAL_STORAGE, 0) > 0:
        return (CPU, MEMORY, EPHEMERAL_STORAGE)
    return (CPU, MEMORY)


def least_allocated(cluster: ClusterSnapshot, request: Resources, headroom: Mapping[str, Headroom]) -> int:
    fractions = [_fraction_free(cluster, r, request, headroom) for r in _scored_resources(request)]
    known = [f for f in fractions if f is not None]
    return int(sum(known) / len(known) * MAX_SCORE) if known else 0


def balanced_allocation(
    cluster: ClusterSnapshot, request: Resources, headroom: Mapping[str, Headroom]
) -> int:
    cpu = _fraction_free(cluster, CPU, request, headroom)
    memory = _fraction_free(cluster, MEMORY, request, headroom)
    if cpu is None or memory is None:
        return 0
    # With two resources kube's standard deviation is |a - b| / 2 of the used fractions.
    return int((1.0 - abs(cpu - memory) / 2.0) * MAX_SCORE)


def free_memory(cluster: ClusterSnapshot, request: Resources, headroom: Mapping[str, Headroom]) -> int:
    """MostFreeMemory's measure of one cluster: free memory after one more replica, never negative."""
    return max(0, usable_free(cluster, MEMORY, headroom) - request.get(MEMORY, 0))


def relative_free_memory(free: int, top: int) -> int:
    """MostFreeMemory's score: ``free`` relative to the most free memory among the candidates (``top``)."""
    return free * MAX_SCORE // top if top > 0 else 0


MORE_MEM_MAX = 10


def more_free_memory_ratio(cluster: ClusterSnapshot) -> int:
    """``(free memory / total memory) x 10`` in exact integer arithmetic; 0 when memory is unknown."""
    if cluster.allocatable is None:
        return 0
    total = cluster.allocatable.get(MEMORY, 0)
    if total <= 0:
        return 0
    free = min(max(cluster.free(MEMORY), 0), total)
    return free * MORE_MEM_MAX // total
