"""Karmada's default resource interpreter, for the built-in workload kinds: how many replicas a template
asks for, what one replica requests, and the template with a cluster's share of the replicas.

Follows `pkg/resourceinterpreter/default/native/` (GetReplicas / ReviseReplica):
- Deployment, StatefulSet, ReplicaSet: `spec.replicas` (absent → 1, as the Kubernetes default).
- Job: `spec.parallelism` (absent → 1); a Pod is 1 replica.
- Per-replica request: the pod template's containers summed, raised to any single init container's
  request where that is larger (the Kubernetes effective request).
Anything else is not a workload: 0 replicas, no requirements (it is propagated whole to every cluster).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from federation.model.quantity import format_quantity, parse_quantity

REPLICA_KINDS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")})
JOB = ("batch", "Job")
POD = ("", "Pod")


def _group_kind(template: Mapping[str, Any]) -> tuple[str, str]:
    group = str(template.get("apiVersion", "")).rpartition("/")[0]
    return group, str(template.get("kind", ""))


def is_workload(template: Mapping[str, Any]) -> bool:
    key = _group_kind(template)
    return key in REPLICA_KINDS or key in (JOB, POD)


def replicas_of(template: Mapping[str, Any]) -> int:
    key = _group_kind(template)
    spec = template.get("spec") or {}
    if key in REPLICA_KINDS:
        return int(spec.get("replicas", 1))
    if key == JOB:
        return int(spec.get("parallelism", 1))
    return 1 if key == POD else 0


def pod_spec_of(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if _group_kind(template) == POD:
        return template.get("spec") or {}
    if not is_workload(template):
        return None
    return ((template.get("spec") or {}).get("template") or {}).get("spec") or {}


def resource_request_of(template: Mapping[str, Any]) -> dict[str, str]:
    """One replica's requests as quantity strings (empty when the template requests nothing)."""
    pod = pod_spec_of(template)
    if pod is None:
        return {}
    total = _sum_requests(pod.get("containers") or [])
    for init in pod.get("initContainers") or []:
        for name, value in _requests(init).items():
            total[name] = max(total.get(name, Decimal(0)), value)
    return {name: format_quantity(value) for name, value in sorted(total.items()) if value > 0}


def _sum_requests(containers: list[Mapping[str, Any]]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for container in containers:
        for name, value in _requests(container).items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def _requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    # Kubernetes defaults requests to limits when only limits are given.
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {str(name): parse_quantity(value) for name, value in merged.items()}


def with_replicas(template: Mapping[str, Any], replicas: int) -> dict[str, Any]:
    """A deep copy of the template with its replica count set (ReviseReplica); others unchanged."""
    revised = copy.deepcopy(dict(template))
    key = _group_kind(template)
    if key in REPLICA_KINDS:
        revised.setdefault("spec", {})["replicas"] = replicas
    elif key == JOB:
        revised.setdefault("spec", {})["parallelism"] = replicas
    return revised
