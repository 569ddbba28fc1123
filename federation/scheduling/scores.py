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
- Of a cluster's allocation (``allocated``, ``allocating``) only the plugins in ``READS_ALLOCATION`` and
  MostFreeMemory read anything: the others score two snapshots that differ in allocating alone the same
  (``rows`` takes their parts over when it rebuilds a row for such a snapshot).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from federation.scheduling.fit import (
    balanced_allocation,
    free_memory,
    least_allocated,
    more_free_memory_ratio,
    relative_free_memory,
)
from federation.scheduling.types import (
    BindingInput,
    ClusterSnapshot,
    EngineConfig,
    Headroom,
)

LOCALITY_SCORE = 100
FREE_MEMORY = "MostFreeMemory"
# The order of a cluster's parts (and so of its explanation's scores): the engine's plugins, then extenders.
PLUGIN_ORDER = (
    "ClusterLocality",
    "LeastAllocated",
    "MostFreeMemory",
    "BalancedAllocation",
    "MoreFreeMemoryRatio",
)


# The plugins of ``own_parts`` whose score reads the cluster's allocation (``allocated``, ``allocating``); the
# others (ClusterLocality) score two snapshots that differ in allocating alone the same.
READS_ALLOCATION = frozenset({"LeastAllocated", "BalancedAllocation", "MoreFreeMemoryRatio"})


@dataclass(frozen=True, slots=True)
class ClusterScore:
    name: str
    total: int
    parts: Mapping[str, tuple[int, int]] = field(default_factory=dict)


def cluster_locality(binding: BindingInput, cluster: ClusterSnapshot) -> int:
    return LOCALITY_SCORE if cluster.name in binding.previous else 0


def score_weights(binding: BindingInput, config: EngineConfig) -> dict[str, int]:
    """The weights of the plugins that count for ``binding``: its profile's, enabled and non-zero."""
    profile, disabled = config.profile_for(binding.service_class), config.disabled_plugins
    return {k: w for k, w in profile.score_weights.items() if w and k not in disabled}  # ``config.enabled``


def memo_key(binding: BindingInput, config_id: int) -> Hashable:
    """Everything of ``binding`` (besides whether a cluster is in ``previous``) that a cluster's own parts
    and free memory read: the profile (config and service class) and the request. ``config_id`` is the
    memo's pin of the config. MostFreeMemory's relative score also reads ``top``, which is not in the key:
    whoever combines a part with ``top`` does it per binding (``with_free_memory``)."""
    return ("scores", config_id, binding.service_class, tuple(sorted(binding.resource_request.items())))


def score_clusters(
    binding: BindingInput,
    clusters: Sequence[ClusterSnapshot],
    config: EngineConfig,
    extra: Mapping[str, Mapping[str, tuple[int, int]]] | None = None,
) -> dict[str, ClusterScore]:
    """Weighted scores per cluster; ``extra`` adds externally computed parts (extenders) per cluster."""
    extra = extra or {}
    weights = score_weights(binding, config)
    request, headroom = binding.resource_request, config.profile_for(binding.service_class).headroom
    free: dict[str, int] = {}
    if FREE_MEMORY in weights:
        free = {c.name: free_memory(c, request, headroom) for c in clusters}
    top = max(free.values(), default=0)
    out = {}
    for cluster in clusters:
        parts = own_parts(binding, cluster, weights, headroom)
        if free:
            parts = with_free_memory(parts, relative_free_memory(free[cluster.name], top), weights)
        parts.update(extra.get(cluster.name, {}))
        out[cluster.name] = ClusterScore(cluster.name, total(parts), parts)
    return out


def total(parts: Mapping[str, tuple[int, int]]) -> int:
    return sum(s * w for s, w in parts.values())


def with_free_memory(
    parts: Mapping[str, tuple[int, int]], score: int, weights: Mapping[str, int]
) -> dict[str, tuple[int, int]]:
    """``parts`` with MostFreeMemory's (score, weight) in its place in ``PLUGIN_ORDER``."""
    with_memory = {**parts, FREE_MEMORY: (score, weights[FREE_MEMORY])}
    return {name: with_memory[name] for name in PLUGIN_ORDER if name in with_memory}


def own_parts_read_allocation(weights: Mapping[str, int]) -> bool:
    """Whether ``own_parts`` under ``weights`` reads the cluster's allocation."""
    return not READS_ALLOCATION.isdisjoint(weights)


def own_parts(
    binding: BindingInput,
    cluster: ClusterSnapshot,
    weights: Mapping[str, int],
    headroom: Mapping[str, Headroom],
) -> dict[str, tuple[int, int]]:
    """The engine's own plugins' (score, weight) for one cluster, in ``PLUGIN_ORDER``, but MostFreeMemory,
    which reads the other candidates too (``with_free_memory``)."""
    request = binding.resource_request
    parts: dict[str, tuple[int, int]] = {}
    if "ClusterLocality" in weights:
        parts["ClusterLocality"] = (cluster_locality(binding, cluster), weights["ClusterLocality"])
    if "LeastAllocated" in weights:
        parts["LeastAllocated"] = (least_allocated(cluster, request, headroom), weights["LeastAllocated"])
    if "BalancedAllocation" in weights:
        score = balanced_allocation(cluster, request, headroom)
        parts["BalancedAllocation"] = (score, weights["BalancedAllocation"])
    if "MoreFreeMemoryRatio" in weights:
        parts["MoreFreeMemoryRatio"] = (more_free_memory_ratio(cluster), weights["MoreFreeMemoryRatio"])
    return parts
