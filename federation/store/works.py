"""Works: per-cluster and per-binding queries, orphans, and the sync flag.

Invariant: sync bookkeeping (``needs_sync``) is written with Core statements, so marking a Work synced
does not bump its ``resourceVersion`` (it is not an API change).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import Session

from federation.store.errors import NotFound
from federation.store.kinds import WORK_API_VERSION
from federation.store.manifest import join
from federation.store.repository import Clock, ObjectRepository
from federation.store.tables import EXECUTION_SPACE_PREFIX, ResourceBindingRow, WorkRow, table_of
from federation.store.types import utcnow

KIND = "Work"


def execution_namespace(cluster_name: str) -> str:
    """``karmada-es-<cluster>``: where a cluster's Works live."""
    return EXECUTION_SPACE_PREFIX + cluster_name


class WorkRepository:
    def __init__(self, session: Session, *, clock: Clock = utcnow) -> None:
        self.session = session
        self.objects = ObjectRepository(session, KIND, WORK_API_VERSION, clock=clock)

    def on_cluster(self, cluster_name: str) -> list[dict[str, Any]]:
        return self._where(WorkRow.cluster_name == cluster_name)

    def for_binding(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """Works rendered from the binding ``namespace/name`` ("" namespace: a ClusterResourceBinding)."""
        statement = (
            select(WorkRow)
            .join(ResourceBindingRow, WorkRow.binding_id == ResourceBindingRow.id)
            .where(ResourceBindingRow.namespace == namespace, ResourceBindingRow.name == name)
            .order_by(WorkRow.namespace, WorkRow.name)
        )
        return [join(row) for row in self.session.scalars(statement)]

    def orphans(self) -> list[dict[str, Any]]:
        """Works whose binding is gone (or never resolved): the execution controller cleans them up."""
        return self._where(WorkRow.binding_id.is_(None))

    def _where(self, condition: ColumnElement[bool]) -> list[dict[str, Any]]:
        statement = select(WorkRow).where(condition).order_by(WorkRow.namespace, WorkRow.name)
        return [join(row) for row in self.session.scalars(statement)]

    def mark_synced(self, namespace: str, name: str, *, seen_seq: int | None = None) -> bool:
        """Clear ``needs_sync`` (with ``seen_seq``: only if no change arrived since); True if cleared."""
        conditions = [WorkRow.namespace == namespace, WorkRow.name == name]
        if seen_seq is not None:
            conditions.append(WorkRow.dirty_seq == seen_seq)
        cleared = self._update(conditions, {"needs_sync": False})
        if not cleared and self.objects.find_row(namespace, name) is None:
            raise NotFound(KIND, namespace, name)
        return cleared

    def mark_needs_sync(self, namespace: str, name: str) -> None:
        values = {"needs_sync": True, "dirty_seq": WorkRow.dirty_seq + 1, "next_attempt_at": None}
        if not self._update([WorkRow.namespace == namespace, WorkRow.name == name], values):
            raise NotFound(KIND, namespace, name)

    def _update(self, conditions: list[ColumnElement[bool]], values: dict[str, Any]) -> bool:
        table = table_of(WorkRow)
        statement = update(table).where(*conditions).values(values)
        result = self.session.execute(statement)
        self._expire_loaded(conditions)
        return bool(result.rowcount)  # type: ignore[attr-defined]

    def _expire_loaded(self, conditions: list[ColumnElement[bool]]) -> None:
        # The Core UPDATE bypassed the identity map; make loaded Works reload the flags on next access.
        for obj in list(self.session.identity_map.values()):
            if isinstance(obj, WorkRow):
                self.session.expire(obj, ["needs_sync", "dirty_seq", "next_attempt_at"])
