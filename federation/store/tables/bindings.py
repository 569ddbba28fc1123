"""ResourceBinding / ClusterResourceBinding, their target clusters and graceful-eviction tasks as rows.

Invariants:
- ``kind`` tells the two binding kinds apart; a ClusterResourceBinding has ``namespace == ""``.
- ``binding_target_clusters`` mirrors ``spec.clusters`` and ``graceful_eviction_tasks`` mirrors
  ``spec.gracefulEvictionTasks`` exactly; the repository rewrites the rows in the same flush as the JSON,
  and the JSON stays the source the API returns. The rows exist so "which bindings are on cluster X"
  and "which tasks evict from X" are one indexed query.
- ``needs_scheduling`` is set when the binding is created or its spec changes (``spec.clusters`` and
  ``gracefulEvictionTasks`` included: an eviction leaves replicas to place), cleared by the scheduler
  when it finishes (see ``claims``).
- ``cluster_sensitive`` and ``application_failover`` are derived from the body on every write (see
  ``derive``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from federation.store.tables.base import NAME_LENGTH, Base, ClaimMixin, ObjectMixin, bool_column
from federation.store.types import JSONType, UTCDateTime


class ResourceBindingRow(ObjectMixin, ClaimMixin, Base):
    __tablename__ = "resource_bindings"
    __table_args__ = (
        UniqueConstraint("kind", "namespace", "name", name="uq_resource_bindings_kind_namespace_name"),
        # The scheduler's claim query: dirty rows in id order.
        Index("ix_resource_bindings_needs_scheduling_id", "needs_scheduling", "id"),
        # The execution and binding-status change feeds: rows whose content was written since a watermark.
        Index("ix_resource_bindings_content_updated_at", "content_updated_at"),
    )
    dirty_flag = "needs_scheduling"

    # When anything but the status was last written (``updated_at`` moves with status writes too): what
    # the controllers that follow a binding's spec read by. Not indexed on ``updated_at``, so a status-only
    # write changes no indexed column (Postgres can update the row in place).
    content_updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    needs_scheduling: Mapped[bool] = bool_column(default=True)
    # spec.resource.uid: the template this binding was made for.
    template_uid: Mapped[str | None] = mapped_column(String(36), index=True, nullable=True)
    # "<Kind>/<namespace>/<name>" of the policy that claimed the binding (from its policy labels), so
    # deleting a policy finds the templates it claimed with one indexed query.
    policy_key: Mapped[str | None] = mapped_column(String(600), index=True, nullable=True)
    # Whether a cluster change (added, relabelled, retainted, Ready flipped) may change this binding's
    # placement: not Scheduled=True, or Duplicated, or not a workload. The scheduler re-queues these
    # (after matching their affinity in Python) plus every binding on the changed cluster.
    cluster_sensitive: Mapped[bool] = bool_column(index=True, default=True)
    # spec.failover.application is set: the bindings the application-failover controller watches.
    application_failover: Mapped[bool] = bool_column(index=True, default=False)

    targets: Mapped[list[BindingTargetClusterRow]] = relationship(
        back_populates="binding", cascade="all, delete-orphan", passive_deletes=True
    )
    eviction_tasks: Mapped[list[GracefulEvictionTaskRow]] = relationship(
        back_populates="binding", cascade="all, delete-orphan", passive_deletes=True
    )


class BindingTargetClusterRow(Base):
    """One entry of a binding's ``spec.clusters``."""

    __tablename__ = "binding_target_clusters"
    __table_args__ = (UniqueConstraint("binding_id", "cluster_name", name="uq_binding_target_clusters"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    binding_id: Mapped[int] = mapped_column(ForeignKey("resource_bindings.id", ondelete="CASCADE"))
    cluster_name: Mapped[str] = mapped_column(String(NAME_LENGTH), index=True)
    replicas: Mapped[int] = mapped_column(Integer, default=0)

    binding: Mapped[ResourceBindingRow] = relationship(back_populates="targets")


class GracefulEvictionTaskRow(Base):
    """One entry of a binding's ``spec.gracefulEvictionTasks`` (Karmada GracefulEvictionTask)."""

    __tablename__ = "graceful_eviction_tasks"
    __table_args__ = (UniqueConstraint("binding_id", "from_cluster", name="uq_graceful_eviction_tasks"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    binding_id: Mapped[int] = mapped_column(ForeignKey("resource_bindings.id", ondelete="CASCADE"))
    from_cluster: Mapped[str] = mapped_column(String(NAME_LENGTH), index=True)
    replicas: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reason: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    message: Mapped[str] = mapped_column(Text, default="")
    producer: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    # Indexed for the timeout sweep of the graceful-eviction controller.
    creation_timestamp: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True, nullable=True)
    grace_period_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    suppress_deletion: Mapped[bool | None] = bool_column(nullable=True)
    purge_mode: Mapped[str | None] = mapped_column(String(32), nullable=True)
    clusters_before_failover: Mapped[list[Any]] = mapped_column(JSONType, default=list)

    binding: Mapped[ResourceBindingRow] = relationship(back_populates="eviction_tasks")
