"""Build a ``ClusterSnapshot`` from a Karmada ``Cluster`` object (a manifest dict, as stored or in a file).

Invariants:
- Reads only: ``metadata.name/labels/deletionTimestamp``, ``spec.provider/region/zone/zones/taints``,
  ``status.conditions[type=Ready]``, ``status.apiEnablements``, ``status.resourceSummary``.
- ``zones`` is ``spec.zones``, or ``[spec.zone]`` when only the deprecated single zone is set.
- Quantities become base-unit ints: cpu in milli-cores (rounded up), everything else rounded up to units.
- No ``status.apiEnablements`` → ``api_enablements=None`` (unreported); no ``resourceSummary`` (or no
  ``allocatable`` in it) → ``allocatable=None`` (Karmada's estimator then answers 0).
- Raises ``ValueError`` naming the field for a malformed quantity or taint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from federation.model.placement import Taint
from federation.model.quantity import to_int, to_milli
from federation.scheduling.types import CPU, ClusterSnapshot


def resources(values: Mapping[str, Any] | None, path: str = "") -> dict[str, int]:
    """``{"cpu": "4", "memory": "8Gi"}`` → ``{"cpu": 4000, "memory": 8589934592}``."""
    out: dict[str, int] = {}
    for name, quantity in (values or {}).items():
        try:
            out[str(name)] = to_milli(quantity) if name == CPU else to_int(quantity)
        except ValueError as exc:
            raise ValueError(f"{path}.{name}: {exc}") from exc
    return out


def api_enablements(items: Any) -> frozenset[str] | None:
    """``[{groupVersion, resources: [{name, kind}]}]`` → ``{"apps/v1/Deployment", ...}``."""
    if items is None:
        return None
    return frozenset(
        f"{entry.get('groupVersion', '')}/{resource.get('kind', '')}"
        for entry in items
        for resource in entry.get("resources") or ()
    )


def _ready(conditions: Any) -> bool:
    for condition in conditions or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _taints(items: Any) -> tuple[Taint, ...]:
    try:
        return tuple(Taint.model_validate(t) for t in items or ())
    except ValueError as exc:
        raise ValueError(f"spec.taints: {exc}") from exc


def from_cluster(obj: Mapping[str, Any]) -> ClusterSnapshot:
    """The engine's view of one Karmada Cluster manifest."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    summary = status.get("resourceSummary")
    allocatable = None
    if summary and summary.get("allocatable") is not None:
        allocatable = resources(summary["allocatable"], "status.resourceSummary.allocatable")
    zone = str(spec.get("zone") or "")
    return ClusterSnapshot(
        name=str(meta.get("name", "")),
        labels=dict(meta.get("labels") or {}),
        provider=str(spec.get("provider") or ""),
        region=str(spec.get("region") or ""),
        zone=zone,
        zones=tuple(spec.get("zones") or ([zone] if zone else [])),
        taints=_taints(spec.get("taints")),
        ready=_ready(status.get("conditions")),
        deleting=bool(meta.get("deletionTimestamp")),
        api_enablements=api_enablements(status.get("apiEnablements")),
        allocatable=allocatable,
        allocated=resources((summary or {}).get("allocated"), "status.resourceSummary.allocated"),
        allocating=resources((summary or {}).get("allocating"), "status.resourceSummary.allocating"),
    )
