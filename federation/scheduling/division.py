"""Replica division: Duplicated, StaticWeight, DynamicWeight, Aggregated, overflow tiers (Karmada §1).

Invariants:
- Every division is Webster (``webster.allocate_webster_seats``) with the uid tie-break, started from no
  seats; inertia comes only from merging with the previous placement (steady scale-up), never from
  initial seats.
- Results are ``{cluster: replicas}``: Duplicated and StaticWeight list every candidate, zeros included;
  DynamicWeight and Aggregated only the clusters with replicas (``webster.seats_won``: a few replicas over
  many clusters). The engine drops zeros either way (``removeZeroReplicasCluster``).
- Dynamic modes (Karmada ``assignment.go``):
  * fresh (reschedule triggered): weights = allocatable + own previous replicas, target = desired, no merge;
  * steady scale-down (assigned > desired): weights = previous replicas on still-candidate clusters;
  * steady scale-up (assigned < desired, first schedule included): weights = allocatable, target = the delta,
    merged onto the previous replicas, so existing replicas never move;
  * assigned == desired: the previous replicas on candidate clusters, unchanged.
- Not enough capacity raises ``UnschedulableError``; the caller keeps the previous placement.
- Weight lists are ordered by weight desc with a *stable* sort over the candidate order (Karmada uses Go's
  unstable ``sort.Sort``; the order only matters for Aggregated's prefix when weights tie).
- Candidates (anything ``Divisible``: a ``Candidate``, the engine's ``rows.Placed``) have distinct names,
  cluster names, so weights are kept by name.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from federation.model.placement import StaticClusterWeight
from federation.scheduling.webster import allocate_webster_seats, larger_name_wins, seats_won


class UnschedulableError(Exception):
    """Capacity is short (Karmada's ``framework.UnschedulableError``); the previous placement stays."""


class Divisible(Protocol):
    """What division reads of a selected cluster: ``Candidate``, or the engine's ``rows.Placed``."""

    @property
    def name(self) -> str: ...

    @property
    def allocatable(self) -> int: ...

    @property
    def overflow_order(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A selected cluster as division sees it: extra replicas it can take and its overflow tier."""

    name: str
    allocatable: int = 0
    overflow_order: int = 0


@dataclass(frozen=True, slots=True)
class Division:
    """A division result plus the trace the explanation shows."""

    replicas: dict[str, int]
    trace: dict[str, Any] = field(default_factory=dict)


def webster_divide(total: int, weights: Mapping[str, int], uid: str = "") -> dict[str, int]:
    """Karmada's ``Dispenser.AllocateByWeight`` with no initial seats and the uid tie-break."""
    return allocate_webster_seats(total, weights, prefer_larger_names=larger_name_wins(uid))


def duplicated(replicas: int, names: Iterable[str]) -> Division:
    """Every candidate runs the full replica count; capacity is never checked."""
    return Division({name: replicas for name in names}, {"strategy": "Duplicated"})


def static_weights(
    names: Sequence[str],
    rules: Sequence[StaticClusterWeight] | None,
    matches: Callable[[str, Any], bool],
) -> dict[str, int]:
    """Per-candidate weight: the max over matching rules; unmatched candidates left out; all-zero → all 1."""
    if rules is None:
        return dict.fromkeys(names, 1)
    weights: dict[str, int] = {}
    for name in names:
        weight = max((r.weight for r in rules if matches(name, r.target_cluster)), default=0)
        if weight > 0:
            weights[name] = weight
    return weights if weights else dict.fromkeys(names, 1)


def static_weight(replicas: int, weights: Mapping[str, int], uid: str = "") -> Division:
    """Webster over the static weights, from scratch on every run; no capacity check, never Unschedulable."""
    result = webster_divide(replicas, weights, uid)
    return Division(result, {"strategy": "StaticWeight", "weights": dict(weights), "target": replicas})


def _scheduled(previous: Mapping[str, int], names: Container[str]) -> dict[str, int]:
    """``FindOutScheduledCluster``: previous entries with replicas on clusters that are still candidates."""
    return {name: count for name, count in previous.items() if count > 0 and name in names}


def dynamic(
    desired: int,
    candidates: Sequence[Divisible],
    previous: Mapping[str, int],
    *,
    fresh: bool = False,
    aggregated: bool = False,
    uid: str = "",
) -> Division:
    """DynamicWeight (``aggregated=False``) or Aggregated division with Karmada's scale up/down inertia."""
    # Weights keep the candidate order: Webster's result does not depend on it, Aggregated's prefix does.
    capacity = {c.name: c.allocatable for c in candidates}
    scheduled = _scheduled(previous, capacity)
    assigned = sum(scheduled.values())
    strategy = "Aggregated" if aggregated else "DynamicWeight"
    base: dict[str, int] = {}
    if fresh:
        weights = _plus(capacity, scheduled)  # capacity is read no more
        mode, target = "fresh", desired
    elif assigned > desired:
        weights = dict(scheduled)
        mode, target = "scale-down", desired
    elif assigned < desired:
        weights = capacity
        mode, target, base = "scale-up", desired - assigned, scheduled
    else:
        return Division(dict(scheduled), {"strategy": strategy, "mode": "steady", "target": 0})
    trace: dict[str, Any] = {"strategy": strategy, "mode": mode, "target": target, "assigned": assigned}
    delta = _divide_dynamic(target, weights, base, aggregated, uid, trace)
    return Division(_merge(base, delta), trace)


def _plus(weights: dict[str, int], extra: Mapping[str, int]) -> dict[str, int]:
    """``weights`` (the caller's own dict, which names all of ``extra``) with ``extra`` added, in place."""
    for name, count in extra.items():
        weights[name] += count
    return weights


def _divide_dynamic(
    target: int,
    weights: dict[str, int],
    scheduled: Mapping[str, int],
    aggregated: bool,
    uid: str,
    trace: dict[str, Any],
) -> dict[str, int]:
    available = sum(weights.values())
    if available < target:
        raise UnschedulableError(f"Clusters available replicas {available} are not enough to schedule.")
    if aggregated:
        prefix = _aggregated_prefix(target, list(weights.items()), scheduled)
        trace["prefix"] = [name for name, _ in prefix]
        weights = dict(prefix)
    return seats_won(target, weights, prefer_larger_names=larger_name_wins(uid))


def _aggregated_prefix(
    target: int, weights: list[tuple[str, int]], scheduled: Mapping[str, int]
) -> list[tuple[str, int]]:
    """Previously used clusters first (stable), then the shortest prefix whose capacity covers the target."""
    weights = sorted(weights, key=lambda pair: -pair[1])
    ordered = [p for p in weights if scheduled.get(p[0], 0) > 0] + [
        p for p in weights if scheduled.get(p[0], 0) <= 0
    ]
    total = 0
    for index, (_, weight) in enumerate(ordered):
        total += weight
        if total >= target:
            return ordered[: index + 1]
    return ordered


def _merge(base: Mapping[str, int], delta: dict[str, int]) -> dict[str, int]:
    """``util.MergeTargetClusters``: add the new replicas onto the old ones. ``delta`` is the caller's own new
    dict: with nothing to add it to (a first schedule, or a fresh one) it is the result itself."""
    if not base:
        return delta
    merged = dict(base)
    for name, count in delta.items():
        merged[name] = merged.get(name, 0) + count
    return merged


def with_overflow(
    desired: int,
    candidates: Sequence[Divisible],
    previous: Mapping[str, int],
    *,
    fresh: bool = False,
    aggregated: bool = False,
    uid: str = "",
) -> Division:
    """Overflow tiers (Karmada v1.18): fill tier 0 first, then each overflow tier in order.

    Each tier gets ``min(remaining, sum(available))`` where available = allocatable + own previous replicas,
    divided with the normal dynamic strategy over that tier alone; so scale-down empties later tiers first.
    """
    tiers = sorted({c.overflow_order for c in candidates})
    if len(tiers) <= 1:
        return dynamic(desired, candidates, previous, fresh=fresh, aggregated=aggregated, uid=uid)
    remaining, result, traces = desired, {}, []
    for tier in tiers:
        members = [c for c in candidates if c.overflow_order == tier]
        budget = min(remaining, sum(c.allocatable + max(previous.get(c.name, 0), 0) for c in members))
        if budget <= 0:
            continue
        part = dynamic(budget, members, previous, fresh=fresh, aggregated=aggregated, uid=uid)
        result.update(part.replicas)
        traces.append({"tier": tier, "budget": budget, **part.trace})
        remaining -= budget
    if remaining > 0:
        raise UnschedulableError(
            f"Clusters available replicas are not enough to schedule: {remaining} replica(s) left "
            "after every overflow tier."
        )
    return Division(result, {"strategy": "Aggregated" if aggregated else "DynamicWeight", "tiers": traces})
