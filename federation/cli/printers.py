"""kubectl-like tables: the columns each kind shows, `-o wide` extras, ages.

Column functions read plain dicts defensively: a missing field prints `<none>` rather than failing,
because status fills in over time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    value: Callable[[Obj], str]
    wide_only: bool = False


def _get(obj: Obj, *path: str) -> Any:
    current: Any = obj
    for key in path:
        if not isinstance(current, dict):
            return None
        current = current.get(key)
    return current


def _text(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "<none>"
    return str(value)


def field(*path: str) -> Callable[[Obj], str]:
    return lambda obj: _text(_get(obj, *path))


def condition(kind: str) -> Callable[[Obj], str]:
    def status(obj: Obj) -> str:
        for cond in _get(obj, "status", "conditions") or []:
            if cond.get("type") == kind:
                return str(cond.get("status", "Unknown"))
        return "<none>"

    return status


def age(obj: Obj, now: datetime | None = None) -> str:
    stamp = _get(obj, "metadata", "creationTimestamp")
    if not stamp:
        return "<unknown>"
    created = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return human_duration(((now or datetime.now(UTC)) - created).total_seconds())


def human_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes}m"
    hours = minutes // 60
    return f"{hours}h" if hours < 48 else f"{hours // 24}d"


def target_clusters(obj: Obj | None) -> str:
    """A binding's placement as ``member1:2,member2:2`` (``<none>`` for no binding or no clusters)."""
    targets = _get(obj or {}, "spec", "clusters") or []
    parts = [f"{t['name']}:{t['replicas']}" if t.get("replicas") is not None else t["name"] for t in targets]
    return _text(",".join(parts))


def _ready_of(obj: Obj) -> str:
    ready = _get(obj, "status", "readyReplicas") or 0
    return f"{ready}/{_get(obj, 'spec', 'replicas') or 0}"


def _work_kind(obj: Obj) -> str:
    manifests = _get(obj, "spec", "workload", "manifests") or []
    return _text(manifests[0].get("kind") if manifests else None)


def _taints(obj: Obj) -> str:
    taints = _get(obj, "spec", "taints") or []
    return _text(",".join(f"{t.get('key')}:{t.get('effect')}" for t in taints))


def workload_key(ref: Obj) -> tuple[str, str, str, str]:
    """A WorkloadRebalancer workload reference as (apiVersion, kind, namespace, name); an absent namespace
    and an empty one are the same (cluster-scoped), as in Karmada's omitempty field."""
    return (
        str(ref.get("apiVersion") or ""),
        str(ref.get("kind") or ""),
        str(ref.get("namespace") or ""),
        str(ref.get("name") or ""),
    )


def observed_results(obj: Obj) -> dict[tuple[str, str, str, str], Obj]:
    """A rebalancer's ``status.observedWorkloads`` that have a result, by workload key."""
    observed = _get(obj, "status", "observedWorkloads") or []
    return {
        workload_key(entry.get("workload") or {}): entry
        for entry in observed
        if isinstance(entry, dict) and entry.get("result")
    }


def _count_workloads(obj: Obj) -> str:
    return str(len(_get(obj, "spec", "workloads") or []))


def _count_results(result: str) -> Callable[[Obj], str]:
    def count(obj: Obj) -> str:
        return str(sum(1 for entry in observed_results(obj).values() if entry.get("result") == result))

    return count


NAME = Column("NAME", field("metadata", "name"))
AGE = Column("AGE", age)

COLUMNS: dict[str, Sequence[Column]] = {
    "Cluster": (
        NAME,
        Column("VERSION", field("status", "kubernetesVersion")),
        Column("MODE", field("spec", "syncMode")),
        Column("READY", condition("Ready")),
        AGE,
        Column("REGION", field("spec", "region"), wide_only=True),
        Column("ZONE", field("spec", "zone"), wide_only=True),
        Column("PROVIDER", field("spec", "provider"), wide_only=True),
        Column("TAINTS", _taints, wide_only=True),
        Column("APIENDPOINT", field("spec", "apiEndpoint"), wide_only=True),
    ),
    "ResourceBinding": (
        NAME,
        Column("SCHEDULED", condition("Scheduled")),
        Column("FULLYAPPLIED", condition("FullyApplied")),
        AGE,
        Column("CLUSTERS", target_clusters, wide_only=True),
    ),
    "Work": (
        NAME,
        Column("WORKLOAD-KIND", _work_kind),
        Column("APPLIED", condition("Applied")),
        AGE,
    ),
    "PropagationPolicy": (
        NAME,
        Column("CONFLICT-RESOLUTION", field("spec", "conflictResolution")),
        Column("PRIORITY", field("spec", "priority")),
        AGE,
    ),
    "Deployment": (
        NAME,
        Column("READY", _ready_of),
        Column("UP-TO-DATE", field("status", "updatedReplicas")),
        Column("AVAILABLE", field("status", "availableReplicas")),
        AGE,
    ),
    "WorkloadPolicy": (
        NAME,
        Column("TOPOLOGY-KEY", field("spec", "topologyKey")),
        Column("TYPE", field("spec", "allocationType")),
        Column("METHOD", field("spec", "allocationMethod")),
        AGE,
    ),
    "WorkloadRebalancer": (
        NAME,
        Column("WORKLOADS", _count_workloads),
        Column("SUCCESSFUL", _count_results("Successful")),
        Column("FAILED", _count_results("Failed")),
        Column("FINISHED", field("status", "finishTime")),
        AGE,
    ),
}
COLUMNS["ClusterResourceBinding"] = COLUMNS["ResourceBinding"]
COLUMNS["ClusterPropagationPolicy"] = COLUMNS["PropagationPolicy"]
COLUMNS["StatefulSet"] = COLUMNS["Deployment"]
DEFAULT_COLUMNS: Sequence[Column] = (NAME, AGE)


def table(kind: str, items: Sequence[Obj], *, wide: bool, with_namespace: bool) -> list[list[str]]:
    """Header row plus one row per object."""
    columns = [c for c in COLUMNS.get(kind, DEFAULT_COLUMNS) if wide or not c.wide_only]
    if with_namespace:
        columns.insert(0, Column("NAMESPACE", field("metadata", "namespace")))
    rows = [[c.header for c in columns]]
    rows.extend([c.value(item) for c in columns] for item in items)
    return rows


def render_rows(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["   ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    return "\n".join(lines)
