"""Cluster selection under spread constraints (Karmada ``pkg/scheduler/core/spreadconstraint``).

Invariants:
- Cluster order everywhere: overflow tier asc, score desc, available replicas desc, name asc.
- Only ``region`` and ``cluster`` constraints drive selection; zone/provider only act as a filter. With no
  constraints, or a static-weight strategy, every feasible cluster is selected, in that order.
- Group (region) scores follow ``calcGroupScore``: duplicated → valid*1000 + avg score of valid clusters;
  divided → capacity towards ``ceil(replicas/minGroups)`` in units of 1000 plus the average score.
- Errors are ``SelectionError`` with Karmada's messages; the engine maps them to SchedulerError.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Protocol, TypeVar

from federation.model.placement import Placement, SpreadConstraint


class SelectionError(Exception):
    """Spread constraints cannot be met (Karmada returns a plain error → reason SchedulerError)."""


class Ranked(Protocol):
    """A feasible cluster as selection reads it: ``ClusterInfo``, or the engine's ``rows.Placed``.

    ``rank`` is the cluster's place in the order (``sort_clusters``), a tuple compared in C.
    """

    @property
    def name(self) -> str: ...

    @property
    def score(self) -> int: ...

    @property
    def available(self) -> int: ...

    @property
    def region(self) -> str: ...

    @property
    def overflow_order(self) -> int: ...

    @property
    def rank(self) -> tuple[int, int, int, str]: ...


R = TypeVar("R", bound=Ranked)


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """A feasible cluster with its total score and AvailableReplicas (allocatable + own replicas)."""

    name: str
    score: int = 0
    available: int = 0
    region: str = ""
    overflow_order: int = 0

    @property
    def rank(self) -> tuple[int, int, int, str]:
        return (self.overflow_order, -self.score, -self.available, self.name)


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A candidate group for ``select_groups``: value = number of clusters, weight = group score."""

    name: str
    value: int
    weight: int


def sort_clusters(clusters: Sequence[R]) -> list[R]:
    return sorted(clusters, key=_rank)


_rank = attrgetter("rank")


def ignores_spread_constraints(placement: Placement) -> bool:
    """``shouldIgnoreSpreadConstraint``: Weighted with no weightPreference, or static list without dynamic."""
    rs = placement.replica_scheduling
    if rs is None or placement.strategy() != "StaticWeight":
        return False
    wp = rs.weight_preference
    return wp is None or bool(wp.static_weight_list)


def select_best_clusters(placement: Placement, clusters: Sequence[R], replicas: int) -> list[R]:
    """``SelectBestClusters``: the clusters to divide over, in selection order."""
    ordered = sort_clusters(clusters)
    constraints = {c.effective_field(): c for c in placement.spreads()}
    if not constraints or ignores_spread_constraints(placement):
        return ordered
    divided = placement.replica_scheduling_type() == "Divided"
    if "region" in constraints:
        return select_by_region(constraints["region"], constraints.get("cluster"), ordered, replicas, divided)
    if "cluster" in constraints:
        return select_by_cluster(constraints["cluster"], ordered, replicas if divided else None)
    raise SelectionError("just support cluster and region spread constraint")


def select_by_cluster(
    constraint: SpreadConstraint, ordered: Sequence[R], need_replicas: int | None
) -> list[R]:
    """Top ``maxGroups`` clusters; for divided workloads swap in bigger clusters until capacity suffices."""
    if len(ordered) < constraint.effective_min_groups():
        raise SelectionError("the number of feasible clusters is less than spreadConstraint.MinGroups")
    need = min(len(ordered), constraint.max_groups or 0)
    if need_replicas is None:
        return list(ordered[:need])
    chosen = _swap_for_capacity(list(ordered[:need]), list(ordered[need:]), need_replicas)
    if chosen is None:
        raise SelectionError(f"no enough resource when selecting {need} clusters")
    return chosen


def _swap_for_capacity(chosen: list[R], rest: list[R], need_replicas: int) -> list[R] | None:
    """``selectClustersByAvailableResource``: from the last selected to the first, swap in the unselected
    cluster with the most available replicas when that is strictly more."""
    index = len(chosen) - 1
    while sum(c.available for c in chosen) < need_replicas and index >= 0:
        best, best_available = -1, chosen[index].available
        for i, candidate in enumerate(rest):
            if candidate.available > best_available:
                best, best_available = i, candidate.available
        if best >= 0:
            chosen[index], rest[best] = rest[best], chosen[index]
        index -= 1
    return chosen if sum(c.available for c in chosen) >= need_replicas else None


def group_score(
    clusters: Sequence[Ranked], replicas: int, min_groups: int, cluster_min_groups: int, divided: bool
) -> int:
    """``calcGroupScore`` for one region (clusters in global order)."""
    if not divided:
        valid = [c.score for c in clusters if c.available >= replicas]
        return len(valid) * 1000 + (sum(valid) // len(valid) if valid else 0)
    target = math.ceil(replicas / min_groups) if min_groups > 0 else replicas
    need = max(cluster_min_groups, min_groups)
    total_available = total_score = counted = 0
    for cluster in clusters:
        total_available += cluster.available
        total_score += cluster.score
        counted += 1
        if counted >= need and total_available >= target:
            break
    if total_available < target:
        return total_available * 1000 + total_score // len(clusters)
    return target * 1000 + total_score // counted


def select_by_region(
    region: SpreadConstraint,
    cluster: SpreadConstraint | None,
    ordered: Sequence[R],
    replicas: int,
    divided: bool,
) -> list[R]:
    """``selectBestClustersByRegion``: best region set, best cluster of each, then fill by score."""
    regions: dict[str, list[R]] = {}
    for info in ordered:
        if info.region:
            regions.setdefault(info.region, []).append(info)
    cluster_min = cluster.effective_min_groups() if cluster else 0
    region_min = region.effective_min_groups()
    scored = {
        name: (group_score(members, replicas, region_min, cluster_min, divided), members)
        for name, members in regions.items()
    }
    return select_from_regions(scored, region, cluster)


def select_from_regions(
    regions: Mapping[str, tuple[int, Sequence[R]]],
    region: SpreadConstraint,
    cluster: SpreadConstraint | None,
) -> list[R]:
    """Region selection given each region's score and its clusters (in global order)."""
    if len(regions) < region.effective_min_groups():
        raise SelectionError("the number of feasible region is less than spreadConstraint.MinGroups")
    cluster_min = cluster.effective_min_groups() if cluster else 0
    cluster_max = (cluster.max_groups or 0) if cluster else 0
    groups = [GroupInfo(name, len(members), score) for name, (score, members) in regions.items()]
    chosen = select_groups(groups, region.effective_min_groups(), region.max_groups or 0, cluster_min)
    if not chosen:
        raise SelectionError("the number of clusters is less than the cluster spreadConstraint.MinGroups")
    return fill_from_regions([regions[g.name][1] for g in chosen], cluster_max)


def fill_from_regions(chosen: Sequence[Sequence[R]], cluster_max: int) -> list[R]:
    """The first cluster of each chosen region, then the rest by score desc, available desc, name asc."""
    selected = [members[0] for members in chosen]
    rest = sort_clusters([c for members in chosen for c in members[1:]])
    need = min(len(selected) + len(rest), cluster_max)
    return selected + rest[: max(0, need - len(selected))]


def select_groups(
    groups: Sequence[GroupInfo], min_groups: int, max_groups: int, target: int
) -> list[GroupInfo]:
    """``selectGroups``: DFS over feasible sets, best by weight, value, discovery; prefer sub-paths."""
    if not groups:
        return []
    ordered = sorted(groups, key=lambda g: (g.value, -g.weight, g.name))
    paths: list[list[GroupInfo]] = []
    _dfs(ordered, min_groups, max_groups, target, [], 0, 0, paths)
    if not paths:
        return []
    ranked = sorted(enumerate(paths), key=lambda p: (-_weight(p[1]), -_value(p[1]), p[0]))
    best = ranked[0][1]
    for _, path in ranked[1:]:
        if len(path) < len(best) and all(a.name == b.name for a, b in zip(path, best, strict=False)):
            best = path
    return best


def _weight(path: Sequence[GroupInfo]) -> int:
    return sum(g.weight for g in path)


def _value(path: Sequence[GroupInfo]) -> int:
    return sum(g.value for g in path)


def _dfs(
    groups: Sequence[GroupInfo],
    min_groups: int,
    max_groups: int,
    target: int,
    path: list[GroupInfo],
    total: int,
    begin: int,
    out: list[list[GroupInfo]],
) -> None:
    if total >= target and min_groups <= len(path) <= max_groups:
        # A found path is stored with its groups ordered by weight desc, then name (Karmada's sortGroups).
        out.append(sorted(path, key=lambda g: (-g.weight, g.name)))
        return
    if len(path) >= max_groups:
        return
    for i in range(begin, len(groups)):
        path.append(groups[i])
        _dfs(groups, min_groups, max_groups, target, path, total + groups[i].value, i + 1, out)
        path.pop()
