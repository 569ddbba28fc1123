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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from federation.model.quantity import format_quantity, to_int, to_milli

Amounts = dict[str, int]
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


def allocatable(nodes: Iterable[Mapping[str, Any]]) -> Amounts:
    total: Amounts = {}
    for node in nodes:
        raw = (node.get("status") or {}).get("allocatable") or {}
        _add(total, {n: _amount(n, v) for n, v in raw.items()})
    return total


def _pods_total(pods: Iterable[Mapping[str, Any]]) -> Amounts:
    total: Amounts = {}
    count = 0
    for pod in pods:
        _add(total, pod_requests(pod.get("spec") or {}))
        count += 1
    total["pods"] = count
    return total


def _bound(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def allocated(pods: Iterable[Mapping[str, Any]]) -> Amounts:
    return _pods_total(p for p in pods if _bound(p) and not _terminated(p))


def allocating(pods: Iterable[Mapping[str, Any]]) -> Amounts:
    return _pods_total(p for p in pods if not _bound(p))


def node_summary(nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    node_list = list(nodes)
    ready = sum(
        1
        for n in node_list
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (n.get("status") or {}).get("conditions") or []
        )
    )
    return {"totalNum": len(node_list), "readyNum": ready}


def summarize(nodes: list[Mapping[str, Any]], pods: list[Mapping[str, Any]]) -> ClusterSummary:
    resources = {
        "allocatable": render(allocatable(nodes)),
        "allocating": render(allocating(pods)),
        "allocated": render(allocated(pods)),
    }
    return ClusterSummary(node_summary(nodes), resources)
