"""Kosmos WorkloadPolicy allocation: exact replica counts per topology value (a cluster label).

Invariants:
- Quota entries are honoured in declaration order; each gets ``min(count, replicas left)`` placed inside the
  clusters whose ``topologyKey`` label equals the entry's name, never beyond a cluster's capacity
  (available replicas = what it can still take + what it already runs of this binding).
- ``Fill`` packs the fewest clusters: previously used first, then most capacity, then name.
  ``Balance`` spreads evenly (Webster with equal weights and the uid tie-break), capped by capacity.
- ``Required``: a hard cap per value; replicas beyond the quotas, or that do not fit in their value, stay
  unplaced and are reported. ``Preferred``: after the quotas, the rest goes first to candidates outside
  every quota value, then to any candidate with room; only a real capacity shortage leaves replicas unplaced.
- Deterministic: no randomness, ties broken by name (direction from the uid).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from federation.model.workloadpolicy import WorkloadPolicy, WorkloadPolicySpec
from federation.scheduling.division import webster_divide

POLICY_LABEL = "workload-policy.kosmos.io"


@dataclass(frozen=True, slots=True)
class PolicyCandidate:
    name: str
    value: str | None
    capacity: int
    previous: int = 0


@dataclass(frozen=True, slots=True)
class PolicyAllocation:
    replicas: dict[str, int]
    unplaced: int
    trace: dict[str, Any] = field(default_factory=dict)


def select_policy(policies: Sequence[WorkloadPolicy], labels: Mapping[str, str]) -> WorkloadPolicy | None:
    """The policy named by the template's ``workload-policy.kosmos.io`` label, else the first (by name)
    whose labelSelector matches the template's labels; policies are those of the template's namespace."""
    ordered = sorted(policies, key=lambda p: p.metadata.name or "")
    named = labels.get(POLICY_LABEL)
    if named:
        for policy in ordered:
            if policy.metadata.name == named:
                return policy
    return next((p for p in ordered if p.spec.selects(labels)), None)


def allocate(
    spec: WorkloadPolicySpec, replicas: int, candidates: Sequence[PolicyCandidate], uid: str = ""
) -> PolicyAllocation:
    used = {c.name: 0 for c in candidates}
    remaining, steps = replicas, []
    quota_values = set()
    for value, count in spec.quota().items():
        quota_values.add(value)
        members = [c for c in candidates if c.value == value]
        placed = _place(min(max(count, 0), remaining), members, used, spec.effective_method(), uid)
        steps.append(
            {"value": value, "quota": count, "placed": placed, "clusters": [m.name for m in members]}
        )
        remaining -= placed
    if spec.effective_type() == "Preferred" and remaining > 0:
        others = [c for c in candidates if c.value not in quota_values]
        for group, label in ((others, "outside quota values"), (list(candidates), "any candidate")):
            placed = _place(remaining, group, used, spec.effective_method(), uid)
            steps.append({"value": label, "placed": placed})
            remaining -= placed
    trace = {"type": spec.effective_type(), "method": spec.effective_method(), "steps": steps}
    return PolicyAllocation({n: r for n, r in used.items() if r > 0}, remaining, trace)


def _place(want: int, members: Sequence[PolicyCandidate], used: dict[str, int], method: str, uid: str) -> int:
    room = {m.name: max(0, m.capacity - used[m.name]) for m in members}
    if want <= 0 or not any(room.values()):
        return 0
    if method == "Fill":
        order = sorted(members, key=lambda m: (-m.previous, -room[m.name], m.name))
        return _fill(want, [m.name for m in order], room, used)
    return _balance(want, room, used, uid)


def _fill(want: int, order: Sequence[str], room: Mapping[str, int], used: dict[str, int]) -> int:
    placed = 0
    for name in order:
        give = min(room[name], want - placed)
        used[name] += give
        placed += give
    return placed


def _balance(want: int, room: dict[str, int], used: dict[str, int], uid: str) -> int:
    """Even split over clusters with room; a cluster that fills up drops out and the rest is split again."""
    placed = 0
    open_names = [n for n, r in room.items() if r > 0]
    while placed < want and open_names:
        share = webster_divide(want - placed, dict.fromkeys(open_names, 1), uid)
        for name in open_names:
            give = min(share[name], room[name])
            room[name] -= give
            used[name] += give
            placed += give
        open_names = [n for n in open_names if room[n] > 0]
    return placed
