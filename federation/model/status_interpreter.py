"""Karmada's default resource interpreter for status (pure; no I/O): what of a member object's status is
reflected into `Work.status.manifestStatuses`, how healthy it is, and how member statuses aggregate into
the template's status.

Sources: `pkg/resourceinterpreter/default/native/{reflectstatus.go, healthy.go, aggregatestatus.go,
status_type.go}`.

Invariants:
- Reflected workload statuses list every counter, 0 when the member omitted it (Kubernetes omits zero
  counters), plus Karmada's `FederatedGeneration` (`generation` of the member object and
  `resourceTemplateGeneration` from its `resourcetemplate.karmada.io/generation` annotation), so
  aggregation can tell whether every member has caught up with the template.
- Health follows Karmada's rules per kind; a kind without a rule is Healthy; an object that cannot be
  read (bad field types) is Unknown.
- Template aggregation (Deployment, StatefulSet) sums the counters; `observedGeneration` becomes the
  template's generation only when every member observed its own generation and was rendered from that
  template generation, otherwise the previous value is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

Health = Literal["Healthy", "Unhealthy", "Unknown"]
HEALTHY: Health = "Healthy"
UNHEALTHY: Health = "Unhealthy"
UNKNOWN: Health = "Unknown"
TEMPLATE_GENERATION_ANNOTATION = "resourcetemplate.karmada.io/generation"

_DEPLOYMENT_COUNTERS = (
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
)
_STATEFULSET_COUNTERS = (
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "availableReplicas",
)
_DAEMONSET_COUNTERS = (
    "currentNumberScheduled",
    "desiredNumberScheduled",
    "numberAvailable",
    "numberMisscheduled",
    "numberReady",
    "updatedNumberScheduled",
    "numberUnavailable",
)
_JOB_FIELDS = ("active", "succeeded", "failed", "conditions", "startTime", "completionTime")


def _group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0]
    return group, str(obj.get("kind") or "")


def _int(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


# -- identifier ---------------------------------------------------------------------------------------


def identifier(manifest: Mapping[str, Any], ordinal: int) -> dict[str, Any]:
    """Karmada's ResourceIdentifier of a Work manifest (``resource`` left out: no REST mapper here)."""
    group, _, version = str(manifest.get("apiVersion") or "").rpartition("/")
    meta = manifest.get("metadata") or {}
    found: dict[str, Any] = {"ordinal": ordinal, "group": group, "version": version}
    found["kind"] = str(manifest.get("kind") or "")
    if meta.get("namespace"):
        found["namespace"] = str(meta["namespace"])
    found["name"] = str(meta.get("name") or "")
    return found


def manifest_status(
    manifest: Mapping[str, Any], ordinal: int, observed: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One ``manifestStatuses`` entry: identifier, reflected status (if any) and health of ``observed``."""
    return {"identifier": identifier(manifest, ordinal), **observed_status(observed)}


def observed_status(observed: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a ``manifestStatuses`` entry says of the member object itself: its reflected status (if any)
    and its health. Depends on the object alone, so a watcher can keep it per object."""
    if observed is None:
        return {"health": UNKNOWN}
    entry: dict[str, Any] = {}
    try:
        status = reflect_status(observed)
    except (TypeError, ValueError):
        status = None
    if status is not None:
        entry["status"] = status
    entry["health"] = interpret_health(observed)
    return entry


# -- reflect ------------------------------------------------------------------------------------------


def reflect_status(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The part of a member object's status Karmada copies into the Work (None: nothing to copy)."""
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return None
    reflect = _REFLECTORS.get(_group_kind(obj))
    return reflect(obj, status) if reflect else dict(status)


def _federated_generation(obj: Mapping[str, Any]) -> dict[str, int]:
    meta = obj.get("metadata") or {}
    annotation = str((meta.get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION) or "")
    template_generation = int(annotation) if annotation.isdigit() else 0
    return {"generation": _int(meta.get("generation")), "resourceTemplateGeneration": template_generation}


def _counters(obj: Mapping[str, Any], status: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    reflected: dict[str, Any] = {name: _int(status.get(name)) for name in names}
    reflected["observedGeneration"] = _int(status.get("observedGeneration"))
    reflected.update(_federated_generation(obj))
    return reflected


def _pick(status: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    return {name: status[name] for name in names if name in status}


_Reflector = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
_REFLECTORS: dict[tuple[str, str], _Reflector] = {
    ("apps", "Deployment"): lambda o, s: _counters(o, s, _DEPLOYMENT_COUNTERS),
    ("apps", "StatefulSet"): lambda o, s: _counters(o, s, _STATEFULSET_COUNTERS),
    ("apps", "DaemonSet"): lambda o, s: _counters(o, s, _DAEMONSET_COUNTERS),
    ("", "Service"): lambda o, s: _pick(s, ("loadBalancer",)),
    ("batch", "Job"): lambda o, s: _pick(s, _JOB_FIELDS),
}


# -- health -------------------------------------------------------------------------------------------


def interpret_health(obj: Mapping[str, Any]) -> Health:
    """Karmada's InterpretHealth: Healthy/Unhealthy by kind; Unknown when the object cannot be read."""
    rule = _HEALTH_RULES.get(_group_kind(obj))
    if rule is None:
        return HEALTHY
    try:
        return HEALTHY if rule(obj) else UNHEALTHY
    except (TypeError, ValueError, AttributeError):
        return UNKNOWN


def _parts(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any], int]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return spec, status, _int((obj.get("metadata") or {}).get("generation"))


def _deployment_healthy(obj: Mapping[str, Any]) -> bool:
    spec, status, generation = _parts(obj)
    if _int(status.get("observedGeneration")) != generation:
        return False
    updated = _int(status.get("updatedReplicas"))
    if spec.get("replicas") is not None and updated < _int(spec["replicas"]):
        return False
    return _int(status.get("availableReplicas")) >= updated


def _statefulset_healthy(obj: Mapping[str, Any]) -> bool:
    spec, status, generation = _parts(obj)
    if _int(status.get("observedGeneration")) != generation:
        return False
    updated, available = _int(status.get("updatedReplicas")), _int(status.get("availableReplicas"))
    if spec.get("replicas") is not None:
        replicas = _int(spec["replicas"])
        rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        # A partitioned rolling update is complete once the pods at or above the partition are updated.
        if updated < replicas - _int(rolling.get("partition")) or available < replicas:
            return False
    return available >= updated


def _replicaset_healthy(obj: Mapping[str, Any]) -> bool:
    spec, status, generation = _parts(obj)
    if _int(status.get("observedGeneration")) != generation:
        return False
    return spec.get("replicas") is None or _int(status.get("availableReplicas")) >= _int(spec["replicas"])


def _daemonset_healthy(obj: Mapping[str, Any]) -> bool:
    _, status, generation = _parts(obj)
    if _int(status.get("observedGeneration")) != generation:
        return False
    updated = _int(status.get("updatedNumberScheduled"))
    return (
        updated >= _int(status.get("desiredNumberScheduled"))
        and _int(status.get("numberAvailable")) >= updated
    )


def _load_balanced(status: Mapping[str, Any]) -> bool:
    ingress = (status.get("loadBalancer") or {}).get("ingress") or []
    return any(i.get("hostname") or i.get("ip") for i in ingress)


def _service_healthy(obj: Mapping[str, Any]) -> bool:
    spec, status, _ = _parts(obj)
    return spec.get("type") != "LoadBalancer" or _load_balanced(status)


def _pod_healthy(obj: Mapping[str, Any]) -> bool:
    _, status, _ = _parts(obj)
    if status.get("phase") == "Succeeded":
        return True
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return status.get("phase") == "Running" and ready


def _pdb_healthy(obj: Mapping[str, Any]) -> bool:
    _, status, _ = _parts(obj)
    return _int(status.get("currentHealthy")) >= _int(status.get("desiredHealthy"))


_HEALTH_RULES: dict[tuple[str, str], Callable[[Mapping[str, Any]], bool]] = {
    ("apps", "Deployment"): _deployment_healthy,
    ("apps", "StatefulSet"): _statefulset_healthy,
    ("apps", "ReplicaSet"): _replicaset_healthy,
    ("apps", "DaemonSet"): _daemonset_healthy,
    ("", "Service"): _service_healthy,
    ("networking.k8s.io", "Ingress"): lambda o: _load_balanced(o.get("status") or {}),
    ("", "PersistentVolumeClaim"): lambda o: (o.get("status") or {}).get("phase") == "Bound",
    ("", "Pod"): _pod_healthy,
    ("policy", "PodDisruptionBudget"): _pdb_healthy,
}


# -- aggregate into the template ---------------------------------------------------------------------

AGGREGATED_KINDS = {
    ("apps", "Deployment"): _DEPLOYMENT_COUNTERS,
    ("apps", "StatefulSet"): _STATEFULSET_COUNTERS,
}


def aggregates(template: Mapping[str, Any]) -> bool:
    """Whether the template's status is aggregated from its members (Deployment, StatefulSet)."""
    return _group_kind(template) in AGGREGATED_KINDS


def aggregate_template_status(
    template: Mapping[str, Any], member_statuses: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The template's new status from the members' reflected statuses; None for other kinds."""
    counters = AGGREGATED_KINDS.get(_group_kind(template))
    if counters is None:
        return None
    old = dict(template.get("status") or {})
    generation = _int((template.get("metadata") or {}).get("generation"))
    summed = {name: sum(_int(s.get(name)) for s in member_statuses) for name in counters}
    caught_up = all(_observed(s, generation) for s in member_statuses)
    summed["observedGeneration"] = generation if caught_up else _int(old.get("observedGeneration"))
    return {**old, **summed}


def _observed(status: Mapping[str, Any], template_generation: int) -> bool:
    return (
        _int(status.get("generation")) == _int(status.get("observedGeneration"))
        and _int(status.get("resourceTemplateGeneration")) == template_generation
    )
