"""Works: one rendered manifest set per (binding, cluster), in namespace ``karmada-es-<cluster>``.

Invariants:
- ``cluster_name`` is derived from the namespace; ``manifest_hash`` is the sha256 of the canonical JSON of
  ``spec.workload.manifests``, so work sync can skip unchanged Works without comparing bodies.
- ``binding_id`` follows the binding's permanent-id label; it turns NULL when the binding is deleted
  (ON DELETE SET NULL), which is how the execution controller finds orphans to clean up on members.
- ``needs_sync`` is set on create and on every spec change; work sync clears it (see ``claims``).
- ``applied`` mirrors ``status.conditions[type=Applied]`` (NULL while unknown).
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from federation.store.tables.base import NAME_LENGTH, Base, ClaimMixin, ObjectMixin, bool_column

EXECUTION_SPACE_PREFIX = "karmada-es-"


class WorkRow(ObjectMixin, ClaimMixin, Base):
    __tablename__ = "works"
    __table_args__ = (
        UniqueConstraint("namespace", "name", name="uq_works_namespace_name"),
        Index("ix_works_needs_sync_id", "needs_sync", "id"),
        # The execution change feed: rows written since its watermark.
        Index("ix_works_updated_at", "updated_at"),
    )
    dirty_flag = "needs_sync"

    cluster_name: Mapped[str] = mapped_column(String(NAME_LENGTH), index=True)
    binding_id: Mapped[int | None] = mapped_column(
        ForeignKey("resource_bindings.id", ondelete="SET NULL"), index=True, nullable=True
    )
    manifest_hash: Mapped[str] = mapped_column(String(64), default="")
    needs_sync: Mapped[bool] = bool_column(default=True)
    applied: Mapped[bool | None] = bool_column(nullable=True)
