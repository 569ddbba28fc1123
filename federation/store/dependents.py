"""What deleting an object does to the objects that depend on it, in the same transaction.

Invariants (Kubernetes garbage collection and Karmada's detector, done in SQL):
- Deleting a resource template deletes its (Cluster)ResourceBindings (each a DELETED in the change log): a
  binding's ownerReference is its template. The bindings' Works lose their `binding_id` (ON DELETE SET
  NULL) and so become orphans the execution controller removes from the members.
- Deleting a (Cluster)PropagationPolicy leaves its bindings and the member objects in place (Karmada
  does not unpropagate on policy deletion) but queues the templates it claimed for detection, so
  another matching policy can claim them.
- Deleting a Cluster queues every binding that targets it for rescheduling (Karmada's trigger "a target
  cluster was deleted").
- Deleting a Kosmos WorkloadPolicy queues the bindings of its namespace (as writing one does).
- Deleting a binding that held counts of a WorkloadPolicy (directly, or with its template) queues the
  bindings under that policy in its namespace: one short of quota may take what it held.
Each is one statement, whatever the number of dependents (plus one query and one statement per
WorkloadPolicy whose counts a deleted binding held).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from federation.model.workloadpolicy import APPLIED_WORKLOAD_POLICY_ANNOTATION
from federation.store import changelog, claims, derive, requeue
from federation.store.tables import (
    BindingTargetClusterRow,
    ClusterPropagationPolicyRow,
    ClusterRow,
    ObjectMixin,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkloadPolicyRow,
    table_of,
)


def before_delete(session: Session, row: ObjectMixin) -> None:
    if isinstance(row, ResourceTemplateRow):
        _delete_bindings_of_template(session, row.uid)
    elif isinstance(row, PropagationPolicyRow | ClusterPropagationPolicyRow):
        _queue_claimed_templates(session, f"{row.kind}/{row.namespace}/{row.name}")
    elif isinstance(row, ClusterRow):
        _queue_bindings_on_cluster(session, row.name)
    elif isinstance(row, WorkloadPolicyRow):
        derive.queue_bindings_in_namespace(session, row.namespace)
    elif isinstance(row, ResourceBindingRow):
        _free_workload_policy_quota(session, [(row.namespace, row.annotations or {})])


def _delete_bindings_of_template(session: Session, template_uid: str) -> None:
    bindings = table_of(ResourceBindingRow)
    gone = changelog.delete_returning(session, ResourceBindingRow, bindings.c.template_uid == template_uid)
    _free_workload_policy_quota(session, [(row.namespace, row.annotations or {}) for row in gone])


def _free_workload_policy_quota(session: Session, deleted: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Deleted bindings held counts of a WorkloadPolicy: queue the workloads sharing that policy, so one
    its counts left short takes them (the scheduler's ``WorkloadPolicyQuotaShort`` trigger)."""
    sharing = {
        (ns, str(a[APPLIED_WORKLOAD_POLICY_ANNOTATION]))
        for ns, a in deleted
        if a.get(APPLIED_WORKLOAD_POLICY_ANNOTATION)
    }
    for namespace, key in sorted(sharing):
        ids = requeue.bindings_under_workload_policy(
            session, namespace, key, APPLIED_WORKLOAD_POLICY_ANNOTATION
        )
        claims.mark_dirty(session, ResourceBindingRow, ids)


def _queue_claimed_templates(session: Session, key: str) -> None:
    templates = table_of(ResourceTemplateRow)
    claimed = select(ResourceBindingRow.template_uid).where(ResourceBindingRow.policy_key == key)
    session.execute(
        update(templates)
        .where(templates.c.uid.in_(claimed.scalar_subquery()))
        .values(claims.queue_values(ResourceTemplateRow))
    )


def _queue_bindings_on_cluster(session: Session, cluster_name: str) -> None:
    bindings = table_of(ResourceBindingRow)
    targeting = select(BindingTargetClusterRow.binding_id).where(
        BindingTargetClusterRow.cluster_name == cluster_name
    )
    session.execute(
        update(bindings)
        .where(bindings.c.id.in_(targeting.scalar_subquery()))
        .values(claims.queue_values(ResourceBindingRow))
    )
