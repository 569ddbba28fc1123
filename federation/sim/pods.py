"""Simulated pods: resource requests, first-fit binding to nodes, and lazily computed pod status.

Invariants:
- Pure functions: no store, no clock; callers pass ``now`` and the time each pod was bound.
- A pod's requests are the sum over its containers of ``resources.requests`` (falling back to ``limits``,
  as the API server defaults them), in integer units: CPU in millicores, everything else whole units; every
  pod also requests one ``pods`` slot.
- A node's free capacity is its ``status.allocatable`` minus the requests of the non-terminated pods bound
  to it. Binding is first-fit in node order; a pod that fits nowhere stays unbound (Pending).
- A bound pod is Running; it is Ready once ``ready_delay`` seconds have passed since binding, unless its
  workload is marked unhealthy, in which case it crash-loops forever (restartCount grows with time).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from federation.model.quantity import to_int, to_milli

Amounts = dict[str, int]
TERMINATED = ("Succeeded", "Failed")


def _amount(resource: str, value: Any) -> int:
    return to_milli(value) if resource == "cpu" else to_int(value)


def container_requests(container: Mapping[str, Any]) -> Amounts:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: _amount(name, value) for name, value in merged.items()}


def pod_requests(pod: Mapping[str, Any]) -> Amounts:
    """Total requests of the pod, plus one ``pods`` slot."""
    total: Amounts = {"pods": 1}
    for container in (pod.get("spec") or {}).get("containers") or []:
        for name, amount in container_requests(container).items():
            total[name] = total.get(name, 0) + amount
    return total


def node_allocatable(node: Mapping[str, Any]) -> Amounts:
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    return {name: _amount(name, value) for name, value in raw.items()}


def is_terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINATED


def node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def free_capacity(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[str, Amounts]:
    """Node name → allocatable minus the requests of live pods bound to it."""
    free = {n["metadata"]["name"]: node_allocatable(n) for n in nodes}
    for pod in pods:
        host = node_name(pod)
        if host in free and not is_terminated(pod):
            for name, amount in pod_requests(pod).items():
                free[host][name] = free[host].get(name, 0) - amount
    return free


def _shortfall(requests: Amounts, free: Amounts) -> str | None:
    """The first resource the node lacks for these requests, or None when it fits."""
    for name, amount in sorted(requests.items()):
        if amount > 0 and free.get(name, 0) < amount:
            return name
    return None


def _selectable(node: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def first_fit(pod: Mapping[str, Any], nodes: list[dict[str, Any]], free: dict[str, Amounts]) -> str | None:
    """The first node with room for the pod; its free capacity is reduced in place."""
    requests = pod_requests(pod)
    for node in nodes:
        name = node["metadata"]["name"]
        if _selectable(node, pod) and _shortfall(requests, free[name]) is None:
            for resource, amount in requests.items():
                free[name][resource] = free[name].get(resource, 0) - amount
            return str(name)
    return None


def unschedulable_message(
    pod: Mapping[str, Any], nodes: list[dict[str, Any]], free: dict[str, Amounts]
) -> str:
    """Like the scheduler's: ``0/3 nodes are available: 3 Insufficient cpu.``"""
    counts: dict[str, int] = {}
    requests = pod_requests(pod)
    for node in nodes:
        if not _selectable(node, pod):
            reason = "node(s) didn't match Pod's node affinity/selector"
        else:
            reason = f"Insufficient {_shortfall(requests, free[node['metadata']['name']])}"
        counts[reason] = counts.get(reason, 0) + 1
    details = ", ".join(f"{n} {r}" for r, n in sorted(counts.items()))
    return f"0/{len(nodes)} nodes are available: {details}."


@functools.lru_cache(maxsize=32768)
def rfc3339(epoch: float) -> str:
    """Cached: every read of a pod renders its times again from the same instants."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(kind: str, ok: bool, at: str, reason: str = "", message: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": at}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def pending_status(pod: Mapping[str, Any], message: str) -> dict[str, Any]:
    created = (pod.get("metadata") or {}).get("creationTimestamp", "")
    return {
        "phase": "Pending",
        "qosClass": "Burstable",
        "conditions": [_condition("PodScheduled", False, created, "Unschedulable", message)],
    }


def restart_period(ready_delay: float) -> float:
    """Seconds between two restarts of a crash-looping pod."""
    return max(ready_delay, 0.5)


def running_status(
    pod: Mapping[str, Any], bound_at: float, now: float, ready_delay: float, crashing: bool
) -> dict[str, Any]:
    """Status of a bound pod at ``now``: Ready after the delay, or crash-looping when ``crashing``."""
    base = dict(pod.get("status") or {})
    ready = not crashing and now >= bound_at + ready_delay
    started = rfc3339(bound_at)
    since = rfc3339(bound_at + ready_delay) if ready else started
    restarts = int((now - bound_at) / restart_period(ready_delay)) if crashing else 0
    containers = [
        _container_status(c, ready, restarts, crashing, started)
        for c in (pod.get("spec") or {}).get("containers") or []
    ]
    not_ready = "" if ready else "ContainersNotReady"
    base.update(
        phase="Running",
        startTime=started,
        qosClass="Burstable",
        containerStatuses=containers,
        conditions=[
            _condition("PodScheduled", True, started),
            _condition("Initialized", True, started),
            _condition("ContainersReady", ready, since, not_ready),
            _condition("Ready", ready, since, not_ready),
        ],
    )
    return base


def _container_status(
    container: Mapping[str, Any], ready: bool, restarts: int, crashing: bool, started: str
) -> dict[str, Any]:
    state: dict[str, Any]
    if crashing:
        message = f"back-off restarting failed container {container.get('name')}"
        state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
    else:
        state = {"running": {"startedAt": started}}
    return {
        "name": container.get("name", ""),
        "image": container.get("image", ""),
        "imageID": "",
        "ready": ready,
        "started": not crashing,
        "restartCount": restarts,
        "state": state,
    }


def is_ready(pod: Mapping[str, Any]) -> bool:
    """Whether a rendered pod is Ready (its Ready condition is True)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
