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
    least_allocated,
    more_free_memory_ratio,
    most_free_memory,
)
from federation.scheduling.types import BindingInput, ClusterSnapshot, EngineConfig

LOCALITY_SCORE = 100


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
) -> dict[str, ClusterScore]:
    """Weighted scores per cluster; ``extra`` adds externally computed parts (extenders) per cluster."""
    profile = config.profile_for(binding.service_class)
    weights = {k: w for k, w in profile.score_weights.items() if w and config.enabled(k)}
    request, headroom = binding.resource_request, profile.headroom
    memory = most_free_memory(clusters, request, headroom) if "MostFreeMemory" in weights else {}
    result: dict[str, ClusterScore] = {}
    for cluster in clusters:
        parts: dict[str, tuple[int, int]] = {}
        if "ClusterLocality" in weights:
            parts["ClusterLocality"] = (cluster_locality(binding, cluster), weights["ClusterLocality"])
        if "LeastAllocated" in weights:
            parts["LeastAllocated"] = (least_allocated(cluster, request, headroom), weights["LeastAllocated"])
        if "MostFreeMemory" in weights:
            parts["MostFreeMemory"] = (memory[cluster.name], weights["MostFreeMemory"])
        if "BalancedAllocation" in weights:
            score = balanced_allocation(cluster, request, headroom)
            parts["BalancedAllocation"] = (score, weights["BalancedAllocation"])
        if "MoreFreeMemoryRatio" in weights:
            parts["MoreFreeMemoryRatio"] = (more_free_memory_ratio(cluster), weights["MoreFreeMemoryRatio"])
        parts.update((extra or {}).get(cluster.name, {}))
        result[cluster.name] = ClusterScore(cluster.name, sum(s * w for s, w in parts.values()), parts)
    return result
