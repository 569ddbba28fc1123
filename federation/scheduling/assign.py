"""Replica assignment for the selected clusters (Karmada ``AssignReplicas``) and WorkloadPolicy allocation.

Invariants:
- Non-workloads go to every selected cluster without replicas.
- Duplicated gives each cluster ``spec.replicas``; StaticWeight divides by rule weights; DynamicWeight and
  Aggregated divide by capacity with inertia and overflow tiers (``division``).
- A WorkloadPolicy replaces the division for every strategy, Duplicated included: its counts say how many
  replicas run in each topology value, which copying ``spec.replicas`` to every cluster would ignore.
  What fits is placed; only when nothing fits for want of capacity is the result Unschedulable.
- ``Outcome.targets`` is None when capacity is short (Unschedulable); zero entries are dropped unless
  empty-workload propagation is on; targets are sorted by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from federation.model.placement import Strategy
from federation.scheduling.division import (
    Divisible,
    Division,
    UnschedulableError,
    duplicated,
    static_weight,
    static_weights,
    with_overflow,
)
from federation.scheduling.filters import cluster_matches
from federation.scheduling.messages import partial_placement
from federation.scheduling.types import (
    BindingInput,
    ClusterSnapshot,
    EngineConfig,
    ResultReason,
    TargetCluster,
)
from federation.scheduling.workloadpolicy import PolicyCandidate, allocate, capacity_short, shortfall


class AttemptError(Exception):
    """Ends one scheduling attempt with a given condition reason (SchedulerError, Unschedulable)."""

    def __init__(self, message: str, reason: ResultReason = "SchedulerError") -> None:
        super().__init__(message)
        self.reason: ResultReason = reason


class Judged(Protocol):
    """A cluster the filters judged, with its snapshot (the engine's ``rows.Row``)."""

    @property
    def snapshot(self) -> ClusterSnapshot: ...


@dataclass(frozen=True, slots=True)
class Candidates:
    """The selected clusters in selection order, and the judged clusters, the selected among them (static
    weights and workload policies read the selected clusters' labels: ``snapshots`` only then)."""

    selected: Sequence[Divisible]
    judged: Sequence[Judged]

    def names(self) -> list[str]:
        return [info.name for info in self.selected]

    def snapshots(self) -> dict[str, ClusterSnapshot]:
        return {j.snapshot.name: j.snapshot for j in self.judged}


@dataclass(frozen=True, slots=True)
class Outcome:
    targets: tuple[TargetCluster, ...] | None
    replicas: dict[str, int] = field(default_factory=dict)
    unplaced: int = 0
    message: str = ""
    trace: dict[str, Any] = field(default_factory=dict)


def assign(
    binding: BindingInput, cands: Candidates, config: EngineConfig, strategy: Strategy | None = None
) -> Outcome:
    """The replicas of the selected clusters; ``strategy``: the placement's, when the caller has it."""
    if not cands.selected:
        raise AttemptError("no clusters available to schedule")
    if not binding.is_workload:
        names = sorted(cands.names())
        return Outcome(tuple(TargetCluster(n) for n in names), trace={"strategy": "NonWorkload"})
    strategy = strategy or binding.placement.strategy()
    if binding.workload_policy is not None:
        return _by_policy(binding, cands)
    try:
        division = _divide(binding, cands, strategy)
    except UnschedulableError as err:
        return Outcome(None, unplaced=binding.replicas, message=str(err), trace={"strategy": strategy})
    return _outcome(division, cands, config)


def _divide(binding: BindingInput, cands: Candidates, strategy: str) -> Division:
    if strategy == "Duplicated":
        return duplicated(binding.replicas, cands.names())
    if strategy == "StaticWeight":
        snapshots = cands.snapshots()
        weights = static_weights(
            cands.names(), binding.placement.static_weights(), lambda n, a: cluster_matches(a, snapshots[n])
        )
        return static_weight(binding.replicas, weights, binding.uid)
    return with_overflow(
        binding.replicas,
        cands.selected,
        binding.previous,
        fresh=binding.fresh,
        aggregated=strategy == "Aggregated",
        uid=binding.uid,
    )


def _outcome(division: Division, cands: Candidates, config: EngineConfig) -> Outcome:
    replicas = {n: r for n, r in division.replicas.items() if r > 0}
    if config.enable_empty_workload_propagation:
        replicas = {n: replicas.get(n, 0) for n in cands.names()}
    targets = tuple([TargetCluster(n, replicas[n]) for n in sorted(replicas)])
    return Outcome(targets, replicas, trace=division.trace)


def _by_policy(binding: BindingInput, cands: Candidates) -> Outcome:
    spec = binding.workload_policy
    assert spec is not None
    candidates = []
    snapshots = cands.snapshots()
    for selected in cands.selected:
        name, own = selected.name, max(binding.previous.get(selected.name, 0), 0)
        label = snapshots[name].labels.get(spec.topology_key)
        candidates.append(PolicyCandidate(name, label, selected.allocatable + own, own))
    result = allocate(spec, binding.replicas, candidates, binding.uid, binding.workload_policy_used)
    trace = {"strategy": "WorkloadPolicy", **result.trace}
    message = ""
    if result.unplaced:
        message = partial_placement(result.placed, binding.replicas, shortfall(spec, result))
        if not result.placed and capacity_short(result):  # nothing fits: Karmada keeps the old placement
            return Outcome(None, unplaced=result.unplaced, message=message, trace=trace)
    targets = tuple(TargetCluster(n, result.replicas[n]) for n in sorted(result.replicas))
    return Outcome(targets, dict(result.replicas), result.unplaced, message, trace)
