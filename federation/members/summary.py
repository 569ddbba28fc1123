"""Cluster summaries from node and pod lists, with Karmada's semantics (cluster_status_controller.go).

Invariants (pure functions, no I/O):
- ``allocatable`` is the sum of every node's ``status.allocatable``.
- ``allocating`` is the sum of the requests of pods with no ``spec.nodeName``; ``pods`` counts them.
- ``allocated`` is the sum of the requests of pods bound to a node and not Succeeded/Failed; ``pods``
  counts them.
- A pod's request per resource is max(sum over containers, max over init containers); a container's
  requests default to its limits, as the API server defaults them. Pod overhead is added.
- Quantities are rendered as canonical strings: CPU in cores or millicores (``"24"``, ``"1500m"``),
  byte quantities with the largest exact binary suffix (``"96Gi"``), counts as integers.
- ``nodeSummary`` counts all nodes and those whose Ready condition is True.
- Pods can be summed a page at a time (``PodTotals``): a member's pods are never all in memory at once
  (a decoded pod is ~6 KB; 10,000 pods held at once were ~60 MB of this process's high-water mark).
- A node or pod can be reduced to a small hashable *view* (``node_view``, ``pod_view``: what the summary
  reads of it, for an informer to keep), and ``summarize_views`` over views counted by multiplicity gives
  exactly what ``summarize`` gives over the objects: both go through the same rules (``_ready``,
  ``_node_allocatable``, ``PodTotals.count``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from federation.model.quantity import format_quantity, to_int, to_milli

Amounts = dict[str, int]
Requests = tuple[tuple[str, int], ...]  # amounts as sorted (resource, amount) pairs: hashable
NodeView = tuple[Requests, bool]  # (allocatable, Ready is True)
PodView = tuple[bool, bool, Requests]  # (bound to a node, Succeeded/Failed, requests)
_BYTES = frozenset({"memory", "ephemeral-storage", "storage"})


@dataclass(frozen=True, slots=True)
class ClusterSummary:
    """Karmada's ``Cluster.status.nodeSummary`` and ``Cluster.status.resourceSummary``."""

    node_summary: dict[str, int]
    resource_summary: dict[str, dict[str, str]]


def _amount(resource: str, value: Any) -> int:
    return to_milli(value) if resource == "cpu" else to_int(value)


def _add(total: Amounts, more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def container_requests(container: Mapping[str, Any]) -> Amounts:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: _amount(name, value) for name, value in merged.items()}


def pod_requests(spec: Mapping[str, Any]) -> Amounts:
    total: Amounts = {}
    for container in spec.get("containers") or []:
        _add(total, container_requests(container))
    for init in spec.get("initContainers") or []:
        for name, amount in container_requests(init).items():
            total[name] = max(total.get(name, 0), amount)
    _add(total, {n: _amount(n, v) for n, v in (spec.get("overhead") or {}).items()})
    return total


def render(amounts: Mapping[str, int]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, amount in sorted(amounts.items()):
        if name == "cpu":
            out[name] = format_quantity(Decimal(amount) / 1000)
        else:
            out[name] = format_quantity(amount, binary=name in _BYTES)
    return out


def _node_allocatable(node: Mapping[str, Any]) -> Amounts:
    raw = (node.get("status") or {}).get("allocatable") or {}
    return {n: _amount(n, v) for n, v in raw.items()}


def allocatable(nodes: Iterable[Mapping[str, Any]]) -> Amounts:
    total: Amounts = {}
    for node in nodes:
        _add(total, _node_allocatable(node))
    return total


def _bound(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _ready(node: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


def node_summary(nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    node_list = list(nodes)
    return {"totalNum": len(node_list), "readyNum": sum(1 for n in node_list if _ready(n))}


@dataclass
class PodTotals:
    """``allocated`` and ``allocating`` summed over pods given a page at a time (each pod is read once)."""

    allocated_requests: Amounts = field(default_factory=dict)
    allocated_pods: int = 0
    allocating_requests: Amounts = field(default_factory=dict)
    allocating_pods: int = 0

    def add(self, pods: Iterable[Mapping[str, Any]]) -> None:
        for pod in pods:
            bound, terminated = _bound(pod), _terminated(pod)
            if not (bound and terminated):  # a finished pod counts nowhere: its requests are not read
                self.count(bound, terminated, pod_requests(pod.get("spec") or {}))

    def count(self, bound: bool, terminated: bool, requests: Mapping[str, int], times: int = 1) -> None:
        """``times`` pods alike: unbound ones are allocating, bound live ones allocated, the rest nothing."""
        if not bound:
            _add(self.allocating_requests, {n: a * times for n, a in requests.items()})
            self.allocating_pods += times
        elif not terminated:
            _add(self.allocated_requests, {n: a * times for n, a in requests.items()})
            self.allocated_pods += times

    @property
    def allocated(self) -> Amounts:
        return {**self.allocated_requests, "pods": self.allocated_pods}

    @property
    def allocating(self) -> Amounts:
        return {**self.allocating_requests, "pods": self.allocating_pods}


def summarize(nodes: Sequence[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> ClusterSummary:
    totals = PodTotals()
    totals.add(pods)
    return summarize_totals(nodes, totals)


def summarize_totals(nodes: Sequence[Mapping[str, Any]], pods: PodTotals) -> ClusterSummary:
    return _summary(node_summary(nodes), allocatable(nodes), pods)


def _summary(nodes: dict[str, int], capacity: Amounts, pods: PodTotals) -> ClusterSummary:
    resources = {
        "allocatable": render(capacity),
        "allocating": render(pods.allocating),
        "allocated": render(pods.allocated),
    }
    return ClusterSummary(nodes, resources)


# -- views: what an informer keeps of a node or a pod ------------------------------------------------


def node_view(node: Mapping[str, Any]) -> NodeView:
    return (tuple(sorted(_node_allocatable(node).items())), _ready(node))


def pod_view(pod: Mapping[str, Any]) -> PodView:
    bound, terminated = _bound(pod), _terminated(pod)
    if bound and terminated:
        # Counted nowhere: one view for all of them (a member's finished Jobs need no requests kept).
        return (True, True, ())
    return (bound, terminated, tuple(sorted(pod_requests(pod.get("spec") or {}).items())))


def summarize_views(nodes: Mapping[NodeView, int], pods: Mapping[PodView, int]) -> ClusterSummary:
    """``summarize`` over objects given as views, each with how many objects have it."""
    capacity: Amounts = {}
    for (amounts, _), times in nodes.items():
        _add(capacity, {n: a * times for n, a in amounts})
    counts = {
        "totalNum": sum(nodes.values()),
        "readyNum": sum(times for (_, ready), times in nodes.items() if ready),
    }
    totals = PodTotals()
    for (bound, terminated, requests), times in pods.items():
        totals.count(bound, terminated, dict(requests), times)
    return _summary(counts, capacity, totals)
