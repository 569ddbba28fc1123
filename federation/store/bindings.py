"""ResourceBindings and ClusterResourceBindings: placement queries, target clusters, eviction tasks.

Invariants:
- Bindings are addressed by (namespace, name); ``namespace == ""`` means a ClusterResourceBinding.
- Every write goes through ``ObjectRepository.replace``, so ``spec.clusters`` / ``spec.gracefulEvictionTasks``
  and their mirror rows change in one flush (see ``derive``).
- ``bindings_on_cluster`` is a single indexed query (join on ``binding_target_clusters.cluster_name``).
- The change-feed queries (``changed_since``, ``changed_templates_since``) return row ids, timestamps and
  resourceVersions only; callers load what they need with ``by_ids`` in one more query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store import claims
from federation.store.derive import parse_timestamp
from federation.store.dialect import among
from federation.store.errors import NotFound
from federation.store.kinds import BINDING_API_VERSION, binding_kind
from federation.store.manifest import format_timestamp, join
from federation.store.repository import Clock, ObjectRepository, manifests_by_id
from federation.store.tables import (
    BindingTargetClusterRow,
    GracefulEvictionTaskRow,
    ResourceBindingRow,
    ResourceTemplateRow,
)
from federation.store.types import utcnow


@dataclass(frozen=True, slots=True)
class TargetCluster:
    """One entry of ``spec.clusters``."""

    name: str
    replicas: int = 0

    def to_spec(self) -> dict[str, Any]:
        return {"name": self.name, "replicas": self.replicas}


@dataclass(frozen=True, slots=True)
class EvictionTask:
    """Karmada's GracefulEvictionTask (one entry of ``spec.gracefulEvictionTasks``)."""

    from_cluster: str
    reason: str = ""
    message: str = ""
    producer: str = ""
    replicas: int | None = None
    creation_timestamp: datetime | None = None
    grace_period_seconds: int | None = None
    suppress_deletion: bool | None = None
    purge_mode: str | None = None
    clusters_before_failover: tuple[str, ...] = field(default=())

    def to_spec(self) -> dict[str, Any]:
        body: dict[str, Any] = {"fromCluster": self.from_cluster, "reason": self.reason}
        optional = {
            "message": self.message or None,
            "producer": self.producer or None,
            "replicas": self.replicas,
            "creationTimestamp": format_timestamp(self.creation_timestamp)
            if self.creation_timestamp
            else None,
            "gracePeriodSeconds": self.grace_period_seconds,
            "suppressDeletion": self.suppress_deletion,
            "purgeMode": self.purge_mode,
            "clustersBeforeFailover": list(self.clusters_before_failover) or None,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        return body

    @classmethod
    def from_row(cls, row: GracefulEvictionTaskRow) -> EvictionTask:
        return cls(
            from_cluster=row.from_cluster,
            reason=row.reason,
            message=row.message,
            producer=row.producer,
            replicas=row.replicas,
            creation_timestamp=row.creation_timestamp,
            grace_period_seconds=row.grace_period_seconds,
            suppress_deletion=row.suppress_deletion,
            purge_mode=row.purge_mode,
            clusters_before_failover=tuple(row.clusters_before_failover or ()),
        )

    @classmethod
    def from_spec(cls, body: dict[str, Any]) -> EvictionTask:
        return cls(
            from_cluster=str(body["fromCluster"]),
            reason=str(body.get("reason") or ""),
            message=str(body.get("message") or ""),
            producer=str(body.get("producer") or ""),
            replicas=body.get("replicas"),
            creation_timestamp=parse_timestamp(body.get("creationTimestamp")),
            grace_period_seconds=body.get("gracePeriodSeconds"),
            suppress_deletion=body.get("suppressDeletion"),
            purge_mode=body.get("purgeMode"),
            clusters_before_failover=tuple(body.get("clustersBeforeFailover") or ()),
        )


class BindingRepository:
    def __init__(self, session: Session, *, clock: Clock = utcnow) -> None:
        self.session = session
        self._clock = clock

    def objects(self, namespace: str) -> ObjectRepository:
        return ObjectRepository(self.session, binding_kind(namespace), BINDING_API_VERSION, clock=self._clock)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects(namespace).get(namespace, name)

    def bindings_on_cluster(self, cluster_name: str) -> list[dict[str, Any]]:
        """Every binding (both kinds) with ``cluster_name`` in ``spec.clusters``, by namespace and name."""
        statement = (
            select(ResourceBindingRow)
            .join(BindingTargetClusterRow, BindingTargetClusterRow.binding_id == ResourceBindingRow.id)
            .where(BindingTargetClusterRow.cluster_name == cluster_name)
            .order_by(ResourceBindingRow.namespace, ResourceBindingRow.name)
        )
        return [join(row) for row in self.session.scalars(statement)]

    def for_template(self, template_uid: str) -> list[dict[str, Any]]:
        statement = select(ResourceBindingRow).where(ResourceBindingRow.template_uid == template_uid)
        return [join(row) for row in self.session.scalars(statement.order_by(ResourceBindingRow.id))]

    def by_ids(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Binding row id → manifest (both kinds) for these ids; deleted ids are absent."""
        return manifests_by_id(self.session, ResourceBindingRow, ids)

    def for_templates(self, template_uids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Template uid → its binding, for these templates (one query; templates without one are absent)."""
        return {uid: join(row) for uid, row in self.rows_for_templates(template_uids).items()}

    def rows_for_templates(self, template_uids: Sequence[str]) -> dict[str, ResourceBindingRow]:
        """``for_templates`` as loaded rows, for a batch writer."""
        if not template_uids:
            return {}
        uid = ResourceBindingRow.template_uid
        statement = select(ResourceBindingRow).where(among(self.session, uid, template_uids))
        return {str(row.template_uid): row for row in self.session.scalars(statement)}

    def changed_since(self, since: datetime | None) -> list[tuple[int, datetime, int, int]]:
        """(id, content_updated_at, id, resourceVersion) of bindings whose content (all but the status) was
        written after ``since`` (every binding when None): a change feed's rows (``ChangeFeed.take``)."""
        b = ResourceBindingRow
        statement = select(b.id, b.content_updated_at, b.resource_version)
        if since is not None:
            statement = statement.where(b.content_updated_at > since)
        return [(int(i), at, int(i), int(rv)) for i, at, rv in self.session.execute(statement)]

    def changed_templates_since(self, since: datetime | None) -> list[tuple[int, datetime, int, int]]:
        """(binding id, template content_updated_at, binding id, template resourceVersion) for bindings
        whose template's content was written after ``since``: a change feed's rows, one per binding."""
        t = ResourceTemplateRow
        statement = select(ResourceBindingRow.id, t.content_updated_at, t.resource_version).join(
            t, t.uid == ResourceBindingRow.template_uid
        )
        if since is not None:
            statement = statement.where(t.content_updated_at > since)
        return [(int(i), at, int(i), int(rv)) for i, at, rv in self.session.execute(statement)]

    def set_target_clusters(
        self, namespace: str, name: str, clusters: Sequence[TargetCluster], *, expected_rv: str | None = None
    ) -> dict[str, Any]:
        """Write the placement (``spec.clusters`` and its rows). Does not re-queue for scheduling."""
        obj = self._require(namespace, name)
        if expected_rv is not None:
            obj["metadata"]["resourceVersion"] = expected_rv
        obj.setdefault("spec", {})["clusters"] = [cluster.to_spec() for cluster in clusters]
        return self.objects(namespace).replace(obj)

    def add_eviction_task(self, namespace: str, name: str, task: EvictionTask) -> dict[str, Any]:
        """Add a task (one per source cluster, an existing one is kept) and queue a reschedule."""
        obj = self._require(namespace, name)
        tasks = list(obj.setdefault("spec", {}).get("gracefulEvictionTasks") or [])
        if any(t.get("fromCluster") == task.from_cluster for t in tasks):
            return obj
        obj["spec"]["gracefulEvictionTasks"] = [*tasks, task.to_spec()]
        result = self.objects(namespace).replace(obj)
        self.mark_for_scheduling(namespace, name)
        return result

    def remove_eviction_task(self, namespace: str, name: str, from_cluster: str) -> dict[str, Any]:
        obj = self._require(namespace, name)
        tasks = obj.get("spec", {}).get("gracefulEvictionTasks") or []
        kept = [t for t in tasks if t.get("fromCluster") != from_cluster]
        if len(kept) == len(tasks):
            return obj
        obj["spec"]["gracefulEvictionTasks"] = kept
        return self.objects(namespace).replace(obj)

    def eviction_tasks(self, namespace: str, name: str) -> list[EvictionTask]:
        statement = (
            select(GracefulEvictionTaskRow)
            .join(ResourceBindingRow, GracefulEvictionTaskRow.binding_id == ResourceBindingRow.id)
            .where(ResourceBindingRow.namespace == namespace, ResourceBindingRow.name == name)
            .order_by(GracefulEvictionTaskRow.from_cluster)
        )
        return [EvictionTask.from_row(row) for row in self.session.scalars(statement)]

    def evictions_from_cluster(self, cluster_name: str) -> list[tuple[str, str, EvictionTask]]:
        """(namespace, name, task) for every binding with a task evicting from ``cluster_name``."""
        statement = (
            select(ResourceBindingRow.namespace, ResourceBindingRow.name, GracefulEvictionTaskRow)
            .join(ResourceBindingRow, GracefulEvictionTaskRow.binding_id == ResourceBindingRow.id)
            .where(GracefulEvictionTaskRow.from_cluster == cluster_name)
            .order_by(ResourceBindingRow.namespace, ResourceBindingRow.name)
        )
        return [(ns, name, EvictionTask.from_row(row)) for ns, name, row in self.session.execute(statement)]

    def mark_for_scheduling(self, namespace: str, name: str) -> None:
        row = self.objects(namespace).require_row(namespace, name)
        claims.mark_dirty(self.session, ResourceBindingRow, [row.id])
        # The Core UPDATE bypassed the identity map; reload these on next access.
        self.session.expire(row, ["needs_scheduling", "dirty_seq", "next_attempt_at"])

    def _require(self, namespace: str, name: str) -> dict[str, Any]:
        obj = self.get(namespace, name)
        if obj is None:
            raise NotFound(binding_kind(namespace), namespace, name)
        return obj
