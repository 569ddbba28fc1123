"""Cluster changes that re-queue bindings for the scheduler (Karmada ``updateCluster`` /
``enqueueAffectedBindings``, semantics §1.9).

Invariants:
- A cluster is queued (``clusters.requeue_bindings``) by ``derive`` when it is created or what the
  scheduler reads of it changes; deleting a cluster re-queues the bindings on it (``dependents``).
- The candidates for one batch of changed clusters come from two queries, whatever the number of
  clusters or bindings: the bindings targeting one of them (indexed join) and the cluster-sensitive
  bindings (indexed flag). Which sensitive ones really match a cluster's affinity is decided by the
  caller (pure placement evaluation), then ``claims.mark_dirty`` queues them in one statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store.tables import BindingTargetClusterRow, ResourceBindingRow


@dataclass(frozen=True, slots=True)
class SensitiveBinding:
    """A binding a cluster change may affect: its row id and its ``spec.placement``."""

    id: int
    placement: dict[str, Any]


def bindings_targeting(session: Session, cluster_names: Sequence[str]) -> list[int]:
    """Row ids of the bindings with any of ``cluster_names`` in ``spec.clusters``."""
    if not cluster_names:
        return []
    statement = (
        select(BindingTargetClusterRow.binding_id)
        .where(BindingTargetClusterRow.cluster_name.in_(list(cluster_names)))
        .distinct()
    )
    return sorted(session.scalars(statement))


def sensitive_bindings(session: Session) -> list[SensitiveBinding]:
    """Every binding flagged ``cluster_sensitive``, with its placement, in id order."""
    statement = (
        select(ResourceBindingRow.id, ResourceBindingRow.spec)
        .where(ResourceBindingRow.cluster_sensitive.is_(True))
        .order_by(ResourceBindingRow.id)
    )
    return [
        SensitiveBinding(row_id, dict((spec or {}).get("placement") or {}))
        for row_id, spec in session.execute(statement)
    ]


def bindings_under_workload_policy(
    session: Session, namespace: str, policy_key: str, annotation: str, exclude: Sequence[int] = ()
) -> list[int]:
    """Row ids of the ResourceBindings of ``namespace`` whose last schedule applied the WorkloadPolicy
    ``policy_key`` (recorded in ``annotation``): the workloads sharing its counts. One query."""
    statement = select(ResourceBindingRow.id).where(
        ResourceBindingRow.namespace == namespace,
        ResourceBindingRow.kind == "ResourceBinding",
        ResourceBindingRow.annotations[annotation].as_string() == policy_key,
    )
    if exclude:
        statement = statement.where(ResourceBindingRow.id.not_in(list(exclude)))
    return [int(i) for i in session.scalars(statement)]
