"""Plain factory functions for scheduling tests (``make_cluster(**overrides)``)."""

from __future__ import annotations

from typing import Any

from federation.model.placement import Placement, Taint
from federation.scheduling.types import BindingInput, ClusterSnapshot

GIB = 1024**3
DEFAULT_APIS = frozenset({"apps/v1/Deployment", "v1/ConfigMap", "v1/Service"})


def make_cluster(name: str = "member1", **overrides: Any) -> ClusterSnapshot:
    """A ready cluster with 100 cpu, 400Gi memory, 1Ti disk, 110 pods, nothing used."""
    values: dict[str, Any] = {
        "name": name,
        "api_enablements": DEFAULT_APIS,
        "allocatable": {"cpu": 100_000, "memory": 400 * GIB, "ephemeral-storage": 1024 * GIB, "pods": 110},
    }
    taints = overrides.pop("taints", None)
    if taints is not None:
        values["taints"] = tuple(t if isinstance(t, Taint) else Taint.model_validate(t) for t in taints)
    values.update(overrides)
    return ClusterSnapshot(**values)


def make_placement(data: dict[str, Any] | None = None) -> Placement:
    return Placement.model_validate(data or {})


def make_binding(
    replicas: int = 0, placement: dict[str, Any] | Placement | None = None, **overrides: Any
) -> BindingInput:
    """A Deployment binding; ``placement`` may be the Karmada JSON form."""
    if not isinstance(placement, Placement):
        placement = make_placement(placement)
    values: dict[str, Any] = {
        "kind": "Deployment",
        "api_version": "apps/v1",
        "name": "nginx",
        "namespace": "default",
        "replicas": replicas,
        "placement": placement,
    }
    values.update(overrides)
    return BindingInput(**values)


def pods_only(name: str, pods: int, **overrides: Any) -> ClusterSnapshot:
    """A cluster whose only capacity limit is its free pod count (requests empty → allowedPods)."""
    return make_cluster(name, allocatable={"pods": pods}, **overrides)


DYNAMIC = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }
}
AGGREGATED = {
    "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
}
