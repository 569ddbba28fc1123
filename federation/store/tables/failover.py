"""Failover state that must outlive a process: taint policies, application health, and the history.

Invariants:
- ``cluster_taint_policies`` stores Karmada's ``ClusterTaintPolicy`` (cluster-scoped) like any API object.
- ``workload_health`` has one row per (binding, cluster) whose workload was ever seen Unhealthy or
  Healthy by the application-failover controller: when the current unhealthy streak began, how many
  unhealthy seconds accumulated across Unhealthy↔Unknown flapping, and since when it ran Healthy. It
  goes with its binding (ON DELETE CASCADE). A restart in the middle of a toleration keeps it.
- ``failover_history`` is append-only: one row per taint change, eviction, task removal, budget change
  and re-placement, with the time, the binding (by uid and name: the row outlives the binding), the
  cluster, the action, the reason and the producer. SQL answers "what moved, when and why".
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from federation.store.tables.base import NAME_LENGTH, Base, ObjectMixin
from federation.store.types import UTCDateTime


class ClusterTaintPolicyRow(ObjectMixin, Base):
    """Karmada ``policy.karmada.io/v1alpha1 ClusterTaintPolicy``."""

    __tablename__ = "cluster_taint_policies"
    __table_args__ = (UniqueConstraint("namespace", "name", name="uq_cluster_taint_policies_namespace_name"),)


class WorkloadHealthRow(Base):
    __tablename__ = "workload_health"
    __table_args__ = (UniqueConstraint("binding_id", "cluster_name", name="uq_workload_health"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    binding_id: Mapped[int] = mapped_column(ForeignKey("resource_bindings.id", ondelete="CASCADE"))
    cluster_name: Mapped[str] = mapped_column(String(NAME_LENGTH), index=True)
    # The health last observed: Healthy, Unhealthy or Unknown.
    health: Mapped[str] = mapped_column(String(16))
    # Start of the current Unhealthy streak (NULL while not Unhealthy).
    unhealthy_since: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Unhealthy seconds accumulated before the current streak (Unknown pauses, Healthy resets).
    unhealthy_seconds: Mapped[float] = mapped_column(default=0.0)
    # Start of the current Healthy run (NULL while not Healthy); kept as the last one when it fails.
    healthy_since: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # How long the workload ran Healthy just before its latest failure (the budget's reset rule).
    healthy_seconds_before_failure: Mapped[float] = mapped_column(default=0.0)
    observed_at: Mapped[datetime] = mapped_column(UTCDateTime())


class FailoverHistoryRow(Base):
    __tablename__ = "failover_history"
    __table_args__ = (
        Index("ix_failover_history_binding_uid_at", "binding_uid", "at"),
        Index("ix_failover_history_cluster_at", "cluster", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    # TaintAdded, TaintRemoved, Evicted, TaskRemoved, BudgetChanged, Replaced, FailoverExhausted...
    action: Mapped[str] = mapped_column(String(64), index=True)
    binding_uid: Mapped[str] = mapped_column(String(36), default="")
    binding_kind: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    binding_namespace: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    binding_name: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    cluster: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    reason: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    producer: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    message: Mapped[str] = mapped_column(Text, default="")
