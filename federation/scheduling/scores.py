"""Score plugins and their weighted sum.

Invariants:
- Each plugin answers 0..100 per cluster; the cluster's total is ``sum(weight * score)`` over enabled plugins
  with a non-zero weight (Karmada sums unweighted scores; its only scoring plugin that counts is
  ClusterLocality, so the default weights ``ClusterLocality: 1`` and 0 for the others reproduce it).
- The weights and headroom are those of the binding's service-class profile (``EngineConfig.profile_for``).
- ClusterLocality: 100 for clusters in ``spec.clusters`` (any replica count), else 0.
- MoreFreeMemoryRatio answers 0..10 (the database scheduler's scale, see ``fit``), not 0..100.
- Extender priorities (0..10) are scaled to 0..100 and multiplied by the extender's weight.
- ``ClusterScore.parts`` keeps every plugin's (score, weight) for the explanation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from federation.scheduling.fit import (
    balanced_allocation,
    free_memory,
    least_allocated,
    more_free_memory_ratio,
    relative_free_memory,
)
from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import (
    MEMORY,
    BindingInput,
    ClusterSnapshot,
    EngineConfig,
    Headroom,
    Resources,
)

LOCALITY_SCORE = 100
# The order of a cluster's parts (and so of its explanation's scores): the engine's plugins, then extenders.
PLUGIN_ORDER = (
    "ClusterLocality",
    "LeastAllocated",
    "MostFreeMemory",
    "BalancedAllocation",
    "MoreFreeMemoryRatio",
)


@dataclass(frozen=True, slots=True)
class ClusterScore:
    name: str
    total: int
    parts: Mapping[str, tuple[int, int]] = field(default_factory=dict)


def cluster_locality(binding: BindingInput, cluster: ClusterSnapshot) -> int:
    return LOCALITY_SCORE if cluster.name in binding.previous else 0


def score_clusters(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    config: EngineConfig,
    extra: Mapping[str, Mapping[str, tuple[int, int]]] | None = None,
    memo: CycleMemo | None = None,
) -> dict[str, ClusterScore]:
    """Weighted scores per cluster; ``extra`` adds externally computed parts (extenders) per cluster.

    With a ``memo`` a cluster's score is reused for the same snapshot unless it involves the binding's own
    lists: ClusterLocality reads ``previous`` and extender parts are the binding's, so clusters in
    ``previous`` or with extender parts are scored for the binding alone. What the others' scores read is
    the profile (the config and the service class), the request and, for MostFreeMemory, the best free
    memory among the candidates (``top``): that is the key.
    """
    extra = extra or {}
    profile = config.profile_for(binding.service_class)
    weights = {k: w for k, w in profile.score_weights.items() if w and config.enabled(k)}
    request, headroom = binding.resource_request, profile.headroom
    free: dict[str, int] = {}
    if "MostFreeMemory" in weights:
        free = _free_memory(clusters, request, headroom, memo)
    top = max(free.values(), default=0)

    def score(cluster: ClusterSnapshot) -> ClusterScore:
        parts = _own_parts(binding, cluster, weights, request, headroom, free, top)
        parts.update(extra.get(cluster.name, {}))
        return ClusterScore(cluster.name, sum(s * w for s, w in parts.values()), parts)

    if memo is None:
        return {cluster.name: score(cluster) for cluster in clusters}
    # Two levels, since ``top`` moves whenever the cluster with the most free memory takes replicas: the
    # parts that do not read it are kept under a key without it, and a score is only put together again.
    config_id, request_key = memo.pin(config), tuple(sorted(request.items()))
    rest_key = ("score-parts", config_id, binding.service_class, request_key)
    rest_weights = {k: w for k, w in weights.items() if k != "MostFreeMemory"}
    personal = {*binding.previous, *(name for name, parts in extra.items() if parts)}

    def rest(cluster: ClusterSnapshot) -> dict[str, tuple[int, int]]:
        return _own_parts(binding, cluster, rest_weights, request, headroom, free, top)

    def shared(cluster: ClusterSnapshot) -> ClusterScore:
        if cluster.name in personal:  # never stored (``per_cluster``): the binding's own score
            return score(cluster)
        parts = memo.one(rest_key, cluster, rest)
        if free:
            memory = (relative_free_memory(free[cluster.name], top), weights["MostFreeMemory"])
            with_memory = {**parts, "MostFreeMemory": memory}
            parts = {name: with_memory[name] for name in PLUGIN_ORDER if name in with_memory}
        return ClusterScore(cluster.name, sum(s * w for s, w in parts.values()), parts)

    key = ("scores", config_id, binding.service_class, request_key, top)
    scored = memo.per_cluster(key, clusters, shared, personal)
    return {cluster.name: value for cluster, value in zip(clusters, scored, strict=True)}


def _own_parts(
    binding: BindingInput,
    cluster: ClusterSnapshot,
    weights: Mapping[str, int],
    request: Resources,
    headroom: Mapping[str, Headroom],
    free: Mapping[str, int],
    top: int,
) -> dict[str, tuple[int, int]]:
    """The engine's own plugins' (score, weight) for one cluster, in ``PLUGIN_ORDER``."""
    parts: dict[str, tuple[int, int]] = {}
    if "ClusterLocality" in weights:
        parts["ClusterLocality"] = (cluster_locality(binding, cluster), weights["ClusterLocality"])
    if "LeastAllocated" in weights:
        parts["LeastAllocated"] = (least_allocated(cluster, request, headroom), weights["LeastAllocated"])
    if "MostFreeMemory" in weights:
        parts["MostFreeMemory"] = (relative_free_memory(free[cluster.name], top), weights["MostFreeMemory"])
    if "BalancedAllocation" in weights:
        score = balanced_allocation(cluster, request, headroom)
        parts["BalancedAllocation"] = (score, weights["BalancedAllocation"])
    if "MoreFreeMemoryRatio" in weights:
        parts["MoreFreeMemoryRatio"] = (more_free_memory_ratio(cluster), weights["MoreFreeMemoryRatio"])
    return parts


def _free_memory(
    clusters: Sequence[ClusterSnapshot],
    request: Resources,
    headroom: Mapping[str, Headroom],
    memo: CycleMemo | None,
) -> dict[str, int]:
    """Each cluster's free memory after one more replica (``free_memory``), from ``memo`` when given."""
    if memo is None:
        return {c.name: free_memory(c, request, headroom) for c in clusters}
    key = ("free-memory", request.get(MEMORY, 0), tuple(sorted(headroom.items())))
    values = memo.per_cluster(key, clusters, lambda c: free_memory(c, request, headroom))
    return {c.name: value for c, value in zip(clusters, values, strict=True)}
