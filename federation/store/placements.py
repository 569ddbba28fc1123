"""Where the ResourceBindings of some namespaces run now, read in one query.

A Kosmos WorkloadPolicy's counts are shared by every workload it governs in its namespace, so before it
decides a batch the scheduler (and the live plan) needs where those workloads already run. Which policy a
binding follows is on the binding (its applied-workload-policy annotation, read by the caller).

Invariants:
- One query whatever the number of bindings: the bindings joined with their target rows
  (``binding_target_clusters``, which mirror ``spec.clusters``), namespaces given; no namespaces, no query.
- Only what that count reads comes back, shaped like the manifest (``metadata.namespace/name/annotations``,
  ``spec.clusters``), in (namespace, name) order, so the count is built the same way every time.
- Bindings without target clusters are left out: they run nothing to count.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store.tables import BindingTargetClusterRow, ResourceBindingRow

NAMESPACED_BINDING = "ResourceBinding"


def placed_bindings(session: Session, namespaces: Collection[str]) -> list[dict[str, Any]]:
    """The ResourceBindings of ``namespaces`` that run somewhere, as partial manifests."""
    if not namespaces:
        return []
    statement = (
        select(
            ResourceBindingRow.id,
            ResourceBindingRow.namespace,
            ResourceBindingRow.name,
            ResourceBindingRow.annotations,
            BindingTargetClusterRow.cluster_name,
            BindingTargetClusterRow.replicas,
        )
        .join(BindingTargetClusterRow, BindingTargetClusterRow.binding_id == ResourceBindingRow.id)
        .where(
            ResourceBindingRow.kind == NAMESPACED_BINDING,
            ResourceBindingRow.namespace.in_(sorted(namespaces)),
        )
        .order_by(ResourceBindingRow.namespace, ResourceBindingRow.name, BindingTargetClusterRow.cluster_name)
    )
    found: dict[int, dict[str, Any]] = {}
    for row_id, namespace, name, notes, cluster, replicas in session.execute(statement):
        binding = found.get(row_id)
        if binding is None:
            meta = {"namespace": namespace, "name": name, "annotations": dict(notes or {})}
            binding = found[row_id] = {"metadata": meta, "spec": {"clusters": []}}
        binding["spec"]["clusters"].append({"name": cluster, "replicas": int(replicas or 0)})
    return list(found.values())
