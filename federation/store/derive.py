"""Columns and child rows computed from a stored body, refreshed on every write of the body.

Invariants:
- Derived state is a function of the row's ``spec``/``status``/``labels``/``annotations``/``namespace``
  only, so it can never disagree with the JSON the API returns (binding target rows == ``spec.clusters``,
  eviction-task rows == ``spec.gracefulEvictionTasks``).
- Child rows are diffed, never dropped and re-added: the unit of work inserts before it deletes, which
  would trip ``UNIQUE(binding_id, cluster_name)``.
- Runs under ``no_autoflush``: a lookup here must not flush a half-built row (that would cost an extra
  UPDATE and bump ``resource_version``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from federation import jsoncodec
from federation.store import claims
from federation.store.childwrites import CHILD_WRITES, ChildWrites
from federation.store.manifest import condition_status
from federation.store.tables import (
    EXECUTION_SPACE_PREFIX,
    BindingTargetClusterRow,
    ClaimMixin,
    ClusterPropagationPolicyRow,
    ClusterRow,
    GracefulEvictionTaskRow,
    ObjectMixin,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkloadPolicyRow,
    WorkRow,
    table_of,
)

# Karmada puts these on every Work; they name the binding the Work was rendered from.
BINDING_NAMESPACE_ANNOTATION = "resourcebinding.karmada.io/namespace"
BINDING_NAME_ANNOTATION = "resourcebinding.karmada.io/name"
CLUSTER_BINDING_NAME_ANNOTATION = "clusterresourcebinding.karmada.io/name"

# Their changes queue the detector.
DETECTED = (ResourceTemplateRow, PropagationPolicyRow, ClusterPropagationPolicyRow)

# The labels the detector puts on a binding to name the policy that claimed it (Karmada's).
PP_NAME_LABEL = "propagationpolicy.karmada.io/name"
PP_NAMESPACE_LABEL = "propagationpolicy.karmada.io/namespace"
CPP_NAME_LABEL = "clusterpropagationpolicy.karmada.io/name"


def refresh(
    session: Session, row: ObjectMixin, *, old_spec: Any, created: bool, content_changed: bool = True
) -> None:
    """Bring ``row``'s derived columns, child rows and dirty flag in line with its body.

    ``content_changed`` is False for status-only writes: they never queue a template or policy.
    """
    with session.no_autoflush:
        if isinstance(row, DETECTED) and content_changed:
            mark_dirty(row, created=created)
        elif isinstance(row, ClusterRow):
            _cluster(row, created)
        elif isinstance(row, ResourceBindingRow):
            sink = None if created else session.info.get(CHILD_WRITES)
            _binding(row, old_spec, created, sink)
        elif isinstance(row, WorkRow):
            _work(session, row, old_spec, created)
        elif isinstance(row, WorkloadPolicyRow) and content_changed:
            queue_bindings_in_namespace(session, row.namespace)


def mark_dirty(row: ClaimMixin, *, created: bool) -> None:
    """Queue the row for its controller; a new input also cancels any retry back-off.

    On an existing row every value is a SQL expression (``claims.queue_values``): the ORM writes an
    expression even when the loaded value looks the same, so a worker's concurrent clear cannot win.
    """
    values = claims.created_values(type(row)) if created else claims.queue_values(type(row))
    for column, value in values.items():
        setattr(row, column, value)


def queue_bindings_in_namespace(session: Session, namespace: str) -> None:
    """A WorkloadPolicy applies to templates of its namespace: their bindings must be looked at again."""
    bindings = table_of(ResourceBindingRow)
    session.execute(
        update(bindings)
        .where(bindings.c.namespace == namespace, bindings.c.kind == "ResourceBinding")
        .values(claims.queue_values(ResourceBindingRow))
    )


def policy_key(labels: Mapping[str, Any]) -> str | None:
    """``PropagationPolicy/<ns>/<name>`` or ``ClusterPropagationPolicy//<name>`` from binding labels."""
    if labels.get(PP_NAME_LABEL):
        return f"PropagationPolicy/{labels.get(PP_NAMESPACE_LABEL, '')}/{labels[PP_NAME_LABEL]}"
    if labels.get(CPP_NAME_LABEL):
        return f"ClusterPropagationPolicy//{labels[CPP_NAME_LABEL]}"
    return None


def _spec_dict(row: ObjectMixin) -> Mapping[str, Any]:
    return row.spec if isinstance(row.spec, Mapping) else {}


def _cluster(row: ClusterRow, created: bool) -> None:
    spec = _spec_dict(row)
    zones = spec.get("zones") or []
    row.region = spec.get("region")
    row.zone = spec.get("zone") or (zones[0] if zones else None)
    row.provider = spec.get("provider")
    row.sync_mode = spec.get("syncMode")
    row.taints = list(spec.get("taints") or [])
    row.ready = condition_status(row.status, "Ready")
    fingerprint = scheduling_hash(row)
    if created or fingerprint != row.scheduling_hash:
        row.scheduling_hash = fingerprint
        mark_dirty(row, created=created)


def scheduling_hash(row: ClusterRow) -> str:
    """What the scheduler reads of a cluster, hashed: labels, spec (taints, provider/region/zones...),
    Ready and apiEnablements. ``resourceSummary`` is left out on purpose: it moves on every status
    tick, and capacity shortfalls are retried with back-off rather than re-queued by events."""
    status = row.status if isinstance(row.status, Mapping) else {}
    view = {
        "labels": row.labels or {},
        "spec": _spec_dict(row),
        "ready": row.ready,
        "apiEnablements": status.get("apiEnablements"),
    }
    canonical = json.dumps(view, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def binding_columns(spec: Any, status: Any, labels: Any) -> dict[str, Any]:
    """A binding's derived columns from its body (the ORM path and ``binding_writes`` both use this)."""
    spec = spec if isinstance(spec, Mapping) else {}
    resource = spec.get("resource") or {}
    return {
        "template_uid": resource.get("uid") or None,
        "policy_key": policy_key(labels or {}),
        "cluster_sensitive": cluster_sensitive(spec, status),
        "application_failover": bool((spec.get("failover") or {}).get("application")),
    }


def _binding(row: ResourceBindingRow, old_spec: Any, created: bool, sink: ChildWrites | None) -> None:
    spec = _spec_dict(row)
    old = old_spec if isinstance(old_spec, Mapping) else {}
    for column, value in binding_columns(spec, row.status, row.labels).items():
        setattr(row, column, value)
    if created or old.get("clusters") != spec.get("clusters"):
        _sync_targets(row, spec.get("clusters") or [], sink)
    if created or old.get("gracefulEvictionTasks") != spec.get("gracefulEvictionTasks"):
        _sync_eviction_tasks(row, spec.get("gracefulEvictionTasks") or [], sink)
    if created or old != spec:
        # Any spec change queues the scheduler, ``spec.clusters`` and ``gracefulEvictionTasks`` included:
        # an eviction (or a user's hand edit) leaves replicas to place and clusters to avoid. The
        # scheduler's own write of ``spec.clusters`` queues it once more; that pass finds no trigger.
        mark_dirty(row, created=created)


def cluster_sensitive(spec: Mapping[str, Any], status: Any) -> bool:
    """Not Scheduled=True, Duplicated (no ``replicaScheduling`` or type Duplicated), or not a workload:
    the bindings whose placement a cluster change can alter (Karmada reschedules the last two on any
    trigger; a failed one may now fit)."""
    if condition_status(status, "Scheduled") is not True:
        return True
    strategy = (spec.get("placement") or {}).get("replicaScheduling")
    if strategy is None or strategy.get("replicaSchedulingType") == "Duplicated":
        return True
    return int(spec.get("replicas") or 0) <= 0 and spec.get("replicaRequirements") is None


def _sync_targets(row: ResourceBindingRow, clusters: list[Any], sink: ChildWrites | None) -> None:
    wanted = {str(c["name"]): int(c.get("replicas") or 0) for c in clusters if isinstance(c, Mapping)}
    existing = {target.cluster_name: target for target in row.targets}
    for name, gone in existing.items():
        if name not in wanted:
            if sink is None:
                row.targets.remove(gone)
            else:
                sink.delete(gone)
    for name, replicas in wanted.items():
        target = existing.get(name)
        if sink is None:
            if target is not None:
                target.replicas = replicas
            else:
                row.targets.append(BindingTargetClusterRow(cluster_name=name, replicas=replicas))
        elif target is None:
            sink.insert(
                BindingTargetClusterRow, {"binding_id": row.id, "cluster_name": name, "replicas": replicas}
            )
        elif target.replicas != replicas:
            sink.update(target, {"replicas": replicas})


def _sync_eviction_tasks(row: ResourceBindingRow, tasks: list[Any], sink: ChildWrites | None) -> None:
    wanted = {str(t["fromCluster"]): t for t in tasks if isinstance(t, Mapping)}
    existing = {task.from_cluster: task for task in row.eviction_tasks}
    for name, stale in existing.items():
        if name not in wanted:
            if sink is None:
                row.eviction_tasks.remove(stale)
            else:
                sink.delete(stale)
    for name, body in wanted.items():
        task = existing.get(name)
        values = eviction_task_values(body)
        if sink is None:
            if task is None:
                task = GracefulEvictionTaskRow(from_cluster=name)
                row.eviction_tasks.append(task)
            for column, value in values.items():
                setattr(task, column, value)
        elif task is None:
            sink.insert(GracefulEvictionTaskRow, {"binding_id": row.id, "from_cluster": name, **values})
        elif any(getattr(task, column) != value for column, value in values.items()):
            sink.update(task, values)


def eviction_task_values(body: Mapping[str, Any]) -> dict[str, Any]:
    """An eviction-task row's columns from its ``spec.gracefulEvictionTasks`` entry."""
    return {
        "replicas": body.get("replicas"),
        "reason": str(body.get("reason") or ""),
        "message": str(body.get("message") or ""),
        "producer": str(body.get("producer") or ""),
        "creation_timestamp": parse_timestamp(body.get("creationTimestamp")),
        "grace_period_seconds": body.get("gracePeriodSeconds"),
        "suppress_deletion": body.get("suppressDeletion"),
        "purge_mode": body.get("purgeMode"),
        "clusters_before_failover": list(body.get("clustersBeforeFailover") or []),
    }


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp from a manifest (``...Z`` or with an offset), or None."""
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _work(session: Session, row: WorkRow, old_spec: Any, created: bool) -> None:
    for column, value in work_columns(row.namespace, row.spec, row.status, row.cluster_name).items():
        setattr(row, column, value)
    if row.binding_id is None:  # a batch writer may have preset it on a new row
        row.binding_id = _binding_id(session, row.annotations or {})
    if created or old_spec != row.spec:
        mark_dirty(row, created=created)


def work_columns(namespace: str, spec: Any, status: Any, cluster_name: str | None = "") -> dict[str, Any]:
    """A Work's columns computed from its body: ``cluster_name`` (from its execution namespace; else the
    one it has), ``manifest_hash`` and ``applied``."""
    if namespace.startswith(EXECUTION_SPACE_PREFIX):
        cluster_name = namespace[len(EXECUTION_SPACE_PREFIX) :]
    return {
        "cluster_name": cluster_name or "",
        "manifest_hash": manifest_hash(spec if isinstance(spec, Mapping) else {}),
        **work_status_columns(status),
    }


def work_status_columns(status: Any) -> dict[str, Any]:
    """What a Work's status alone gives its row (a status-only write recomputes nothing else)."""
    return {"applied": condition_status(status, "Applied")}


def manifest_hash(spec: Mapping[str, Any]) -> str:
    """The sha256 of the canonical JSON of a Work's manifests (``jsoncodec.canonical``: the standard
    library's sorted compact form, the one every stored hash was made with)."""
    manifests = (spec.get("workload") or {}).get("manifests") or []
    return hashlib.sha256(jsoncodec.canonical(manifests)).hexdigest()


def _binding_id(session: Session, annotations: Mapping[str, Any]) -> int | None:
    namespace = str(annotations.get(BINDING_NAMESPACE_ANNOTATION) or "")
    name = annotations.get(BINDING_NAME_ANNOTATION) if namespace else None
    name = name or annotations.get(CLUSTER_BINDING_NAME_ANNOTATION)
    if not name:
        return None
    statement = select(ResourceBindingRow.id).where(
        ResourceBindingRow.namespace == namespace, ResourceBindingRow.name == str(name)
    )
    return session.scalar(statement)
