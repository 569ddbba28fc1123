"""Tables for API objects that need only the shared columns plus a few indexed extracts.

Invariant: every extracted column (``region``, ``ready``, ...) is derived from the stored body by the
repository on each write (``federation.store.derive``); nothing else writes them, except
``clusters.credentials``, which is not part of the body at all (encrypted, never returned).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from federation.store.tables.base import NAME_LENGTH, Base, ClaimMixin, ObjectMixin, bool_column
from federation.store.types import JSONType, UTCDateTime


def _unique_name(table: str) -> UniqueConstraint:
    return UniqueConstraint("namespace", "name", name=f"uq_{table}_namespace_name")


class ClusterRow(ObjectMixin, ClaimMixin, Base):
    """A member cluster (cluster.karmada.io Cluster, cluster-scoped).

    ``requeue_bindings`` queues the cluster for the scheduler: set on create and whenever what scheduling
    reads of it changes (labels, spec, Ready, apiEnablements; ``scheduling_hash`` remembers the last
    view), so the scheduler re-queues the bindings the change may affect (Karmada ``updateCluster``).
    """

    __tablename__ = "clusters"
    __table_args__ = (
        _unique_name("clusters"),
        Index("ix_clusters_requeue_bindings_id", "requeue_bindings", "id"),
    )
    dirty_flag = "requeue_bindings"
    requeue_bindings: Mapped[bool] = bool_column(default=True)
    # sha256 of the scheduling-relevant view of the cluster (see derive); resourceSummary is not in it.
    scheduling_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)

    region: Mapped[str | None] = mapped_column(String(NAME_LENGTH), index=True, nullable=True)
    zone: Mapped[str | None] = mapped_column(String(NAME_LENGTH), index=True, nullable=True)
    provider: Mapped[str | None] = mapped_column(String(NAME_LENGTH), index=True, nullable=True)
    sync_mode: Mapped[str | None] = mapped_column(String(16), index=True, nullable=True)
    taints: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    # Fernet token of the member's kubeconfig/credentials; see federation.store.crypto.
    credentials: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    # From status.conditions[type=Ready]: True/False, NULL while unknown.
    ready: Mapped[bool | None] = bool_column(index=True, nullable=True)


class ResourceTemplateRow(ObjectMixin, ClaimMixin, Base):
    """Any other kind a user propagates (Deployment, ConfigMap, a CRD...), namespaced or cluster-scoped.

    ``needs_detection`` queues the template for the detector: set on create and on every change of its
    labels, annotations or body (not of its status), and by policy changes that may affect it.
    """

    __tablename__ = "resource_templates"
    dirty_flag = "needs_detection"
    needs_detection: Mapped[bool] = bool_column(default=True)
    # When anything but the status was last written (as ``ResourceBindingRow.content_updated_at``).
    content_updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    __table_args__ = (
        Index("ix_resource_templates_needs_detection_id", "needs_detection", "id"),
        # The execution change feed: templates whose content was written since its watermark.
        Index("ix_resource_templates_content_updated_at", "content_updated_at"),
        # Also the index for "list kind K (in namespace N) ordered by namespace, name".
        UniqueConstraint(
            "api_version", "kind", "namespace", "name", name="uq_resource_templates_api_version_kind"
        ),
        Index("ix_resource_templates_kind", "kind"),
    )


class PropagationPolicyRow(ObjectMixin, ClaimMixin, Base):
    """Queued for the detector (``needs_detection``) on create and on every change of its body."""

    __tablename__ = "propagation_policies"
    __table_args__ = (
        _unique_name("propagation_policies"),
        Index("ix_propagation_policies_needs_detection_id", "needs_detection", "id"),
    )
    dirty_flag = "needs_detection"
    needs_detection: Mapped[bool] = bool_column(default=True)


class ClusterPropagationPolicyRow(ObjectMixin, ClaimMixin, Base):
    """Queued for the detector (``needs_detection``) on create and on every change of its body."""

    __tablename__ = "cluster_propagation_policies"
    __table_args__ = (
        _unique_name("cluster_propagation_policies"),
        Index("ix_cluster_propagation_policies_needs_detection_id", "needs_detection", "id"),
    )
    dirty_flag = "needs_detection"
    needs_detection: Mapped[bool] = bool_column(default=True)


class WorkloadPolicyRow(ObjectMixin, Base):
    """Kosmos ``kosmos.io/v1alpha1 WorkloadPolicy``."""

    __tablename__ = "workload_policies"
    __table_args__ = (_unique_name("workload_policies"),)


class WorkloadRebalancerRow(ObjectMixin, Base):
    __tablename__ = "workload_rebalancers"
    __table_args__ = (_unique_name("workload_rebalancers"),)
