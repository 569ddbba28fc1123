"""Kosmos WorkloadPolicy allocation: exact replica counts per topology value (a cluster label), shared by
every workload the policy governs in its namespace.

Invariants:
- Counts are per topology value across all the workloads one policy governs (Kosmos counts every matching
  pod): the replicas other workloads already run in a value (``used``, from a ``QuotaLedger``) are taken
  off its quota before this workload gets any; this workload's own current replicas are not (its whole
  count is decided again).
- Quota entries are honoured in declaration order; each gets ``min(quota - used, replicas left)`` placed
  inside the clusters whose ``topologyKey`` label equals the entry's name, never beyond a cluster's capacity
  (available replicas = what it can still take + what it already runs of this binding).
- ``Fill`` packs the fewest clusters: previously used first, then most capacity, then name.
  ``Balance`` spreads evenly (Webster with equal weights and the uid tie-break), capped by capacity.
- ``Required``: a hard cap per value; replicas beyond what the quotas leave, or that do not fit in their
  value, stay unplaced and are reported. ``Preferred``: after the quotas, the rest goes first to candidates
  outside every quota value, then to any candidate with room; only a real capacity shortage leaves replicas
  unplaced. Either way what fits is placed and ``shortfall`` says why the rest is not.
- The ledger is the one mutable value here, on purpose: a scheduling cycle (or one plan) owns one, and after
  each decision, in binding order, records where that binding now runs, so bindings sharing a quota in one
  cycle are decided one after the other, deterministically (as ``engine.assume`` does for capacity).
- Deterministic: no randomness, ties broken by name (direction from the uid); no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from federation.model.workloadpolicy import (
    APPLIED_WORKLOAD_POLICY_ANNOTATION,
    POLICY_LABELS,
    WorkloadPolicy,
    WorkloadPolicySpec,
    pod_template_labels,
    workload_labels,
)
from federation.scheduling.division import webster_divide

# (namespace, WorkloadPolicy name): a quota is shared by the workloads of one policy in its namespace.
PolicyRef = tuple[str, str]


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

    @property
    def placed(self) -> int:
        return sum(self.replicas.values())


def select_policy(
    policies: Sequence[WorkloadPolicy],
    labels: Mapping[str, str],
    pod_labels: Mapping[str, str] | None = None,
) -> WorkloadPolicy | None:
    """The policy a workload's binding label names (see ``model.workloadpolicy``), else the first (by name)
    whose labelSelector matches its pod template's labels or its own; ``policies`` are its namespace's."""
    ordered = sorted(policies, key=lambda p: p.metadata.name or "")
    by_name = {p.metadata.name: p for p in ordered}
    for source in (labels, pod_labels or {}):
        for key in POLICY_LABELS:
            named = by_name.get(source.get(key) or None)
            if named is not None:
                return named
    return next((p for p in ordered if p.spec.selects(labels, pod_labels)), None)


def select_policy_for(
    policies: Sequence[WorkloadPolicy], template: Mapping[str, Any]
) -> WorkloadPolicy | None:
    """``select_policy`` with the labels of a resource template (its own and its pod template's)."""
    return select_policy(policies, workload_labels(template), pod_template_labels(template))


# -- the shared counts ----------------------------------------------------------------------------------


@dataclass(slots=True)
class QuotaLedger:
    """Where the workloads under each WorkloadPolicy run now: per binding, its policy and its replicas
    per cluster.

    Bindings are keyed by ``binding_key`` ("<namespace>/<name>"); a binding is under at most one policy.
    """

    _policy_of: dict[str, PolicyRef] = field(default_factory=dict)
    _placed: dict[str, dict[str, int]] = field(default_factory=dict)
    _totals: dict[PolicyRef, Counter[str]] = field(default_factory=dict)

    def place(self, binding: str, policy: PolicyRef | None, clusters: Mapping[str, int]) -> None:
        """Record that ``binding`` now runs ``clusters`` under ``policy`` (None: under no policy)."""
        old = self._policy_of.pop(binding, None)
        if old is not None:
            self._totals[old].subtract(self._placed.pop(binding))
        if policy is None:
            return
        placed = {name: count for name, count in clusters.items() if count > 0}
        self._policy_of[binding] = policy
        self._placed[binding] = placed
        self._totals.setdefault(policy, Counter()).update(placed)

    def used_by_others(
        self,
        policy: PolicyRef,
        binding: str,
        topology_key: str,
        cluster_labels: Mapping[str, Mapping[str, str]],
    ) -> dict[str, int]:
        """Topology value → replicas the policy's other workloads run there. A cluster that is gone, or
        has no ``topologyKey`` label, counts for no value."""
        totals = Counter(self._totals.get(policy, Counter()))
        if self._policy_of.get(binding) == policy:
            totals.subtract(self._placed[binding])
        used: Counter[str] = Counter()
        for cluster, count in totals.items():
            value = (cluster_labels.get(cluster) or {}).get(topology_key)
            if value is not None and count > 0:
                used[value] += count
        return dict(sorted(used.items()))


def binding_key(binding: Mapping[str, Any]) -> str:
    """The ledger's name for a ResourceBinding manifest."""
    meta = binding.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def policy_ref(binding: Mapping[str, Any], policy_key: str) -> PolicyRef | None:
    """The quota a binding counts against, from the key of the policy governing it ("name/generation",
    "" for none): policies are namespaced, so the binding's namespace completes it."""
    if not policy_key:
        return None
    namespace = str((binding.get("metadata") or {}).get("namespace") or "")
    return (namespace, policy_key.rsplit("/", 1)[0])


def ledger_of(bindings: Iterable[Mapping[str, Any]]) -> QuotaLedger:
    """The ledger of stored bindings: each counts where ``spec.clusters`` puts it, under the policy its last
    schedule followed (the applied-workload-policy annotation); bindings under no policy are left out."""
    ledger = QuotaLedger()
    for binding in bindings:
        annotations = (binding.get("metadata") or {}).get("annotations") or {}
        ref = policy_ref(binding, str(annotations.get(APPLIED_WORKLOAD_POLICY_ANNOTATION) or ""))
        if ref is None:
            continue
        clusters = (binding.get("spec") or {}).get("clusters") or ()
        ledger.place(
            binding_key(binding), ref, {str(c["name"]): int(c.get("replicas") or 0) for c in clusters}
        )
    return ledger


# -- allocation -----------------------------------------------------------------------------------------


def allocate(
    spec: WorkloadPolicySpec,
    replicas: int,
    candidates: Sequence[PolicyCandidate],
    uid: str = "",
    used: Mapping[str, int] | None = None,
) -> PolicyAllocation:
    """Place ``replicas`` by the policy; ``used`` is what other workloads already hold of each value."""
    taken = dict(used or {})
    placed_on = {c.name: 0 for c in candidates}
    remaining, steps = replicas, []
    method = spec.effective_method()
    for value, count in spec.quota().items():
        members = [c for c in candidates if c.value == value]
        wanted = min(max(count - taken.get(value, 0), 0), remaining)
        placed = _place(wanted, members, placed_on, method, uid)
        steps.append({
            "value": value, "quota": count, "usedByOthers": taken.get(value, 0), "wanted": wanted,
            "placed": placed, "clusters": [m.name for m in members],
        })  # fmt: skip
        remaining -= placed
    if spec.effective_type() == "Preferred" and remaining > 0:
        quota_values = set(spec.quota())
        others = [c for c in candidates if c.value not in quota_values]
        for group, label in ((others, "outside quota values"), (list(candidates), "any candidate")):
            placed = _place(remaining, group, placed_on, method, uid)
            steps.append({"value": label, "placed": placed})
            remaining -= placed
    trace = {"type": spec.effective_type(), "method": method, "steps": steps}
    return PolicyAllocation({n: r for n, r in placed_on.items() if r > 0}, remaining, trace)


def capacity_short(allocation: PolicyAllocation) -> bool:
    """Whether clusters' capacity (not the quotas) kept replicas from being placed."""
    if allocation.trace.get("type") == "Preferred":
        return allocation.unplaced > 0
    return any(s["placed"] < s["wanted"] for s in allocation.trace.get("steps") or ())


def shortfall(spec: WorkloadPolicySpec, allocation: PolicyAllocation) -> str:
    """Why ``allocation.unplaced`` replicas were not placed, for the Scheduled condition's message:
    Required names the replicas beyond what the quotas leave (and who holds them) and the topology values
    whose clusters had no room; Preferred leaves replicas only for want of room."""
    if spec.effective_type() == "Preferred":
        return (
            f"WorkloadPolicy Preferred on {spec.topology_key}: the feasible clusters had room for only "
            f"{allocation.placed}"
        )
    steps = [s for s in allocation.trace.get("steps") or () if "quota" in s]
    parts = []
    left = sum(max(s["quota"] - s["usedByOthers"], 0) for s in steps)
    beyond = allocation.placed + allocation.unplaced - left
    if beyond > 0:
        quotas = ", ".join(_quota_text(s) for s in steps) or "none"
        parts.append(f"{beyond} beyond what the quotas on {spec.topology_key} leave ({quotas})")
    short = [_room_text(s) for s in steps if s["placed"] < s["wanted"]]
    if short:
        parts.append(f"topology values short of room: {', '.join(short)}")
    return f"WorkloadPolicy Required: {'; '.join(parts)}"


def _room_text(step: Mapping[str, Any]) -> str:
    if not step["clusters"]:
        return f"{step['value']} (no candidate cluster)"
    return f"{step['value']} ({step['placed']} of {step['wanted']} placed)"


def _quota_text(step: Mapping[str, Any]) -> str:
    held = step["usedByOthers"]
    return f"{step['value']} {step['quota']}" + (f" ({held} held by other workloads)" if held else "")


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
