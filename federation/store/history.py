"""The failover history: one append-only row per taint change, eviction, task removal, budget change and
re-placement (``failover_history``).

Invariants:
- Rows are only inserted, never updated; callers write them in the same transaction as the change they
  record, so the history and the state never disagree.
- A row names its binding by uid, kind, namespace and name, so it still reads after the binding is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from federation.store.bulkrows import insert_rows
from federation.store.tables import FailoverHistoryRow, table_of

# Actions (the ``action`` column).
TAINT_ADDED = "TaintAdded"
TAINT_REMOVED = "TaintRemoved"
EVICTED = "Evicted"
TASK_REMOVED = "TaskRemoved"
BUDGET_CHANGED = "BudgetChanged"
REPLACED = "Replaced"
FAILOVER_EXHAUSTED = "FailoverExhausted"
EVICTION_PAUSED = "EvictionPaused"


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    at: datetime
    action: str
    cluster: str = ""
    reason: str = ""
    producer: str = ""
    message: str = ""
    binding_uid: str = ""
    binding_kind: str = ""
    binding_namespace: str = ""
    binding_name: str = ""

    @classmethod
    def for_binding(cls, binding: dict[str, Any], **fields: Any) -> HistoryEntry:
        meta = binding.get("metadata") or {}
        return cls(
            binding_uid=str(meta.get("uid") or ""),
            binding_kind=str(binding.get("kind") or ""),
            binding_namespace=str(meta.get("namespace") or ""),
            binding_name=str(meta.get("name") or ""),
            **fields,
        )

    @classmethod
    def from_row(cls, row: FailoverHistoryRow) -> HistoryEntry:
        return cls(
            at=row.at,
            action=row.action,
            cluster=row.cluster,
            reason=row.reason,
            producer=row.producer,
            message=row.message,
            binding_uid=row.binding_uid,
            binding_kind=row.binding_kind,
            binding_namespace=row.binding_namespace,
            binding_name=row.binding_name,
        )


class HistoryRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def record(self, entries: Sequence[HistoryEntry]) -> None:
        """Append rows (one statement for the lot)."""
        if not entries:
            return
        rows = [
            {
                "at": e.at,
                "action": e.action,
                "cluster": e.cluster,
                "reason": e.reason,
                "producer": e.producer,
                "message": e.message[:4096],
                "binding_uid": e.binding_uid,
                "binding_kind": e.binding_kind,
                "binding_namespace": e.binding_namespace,
                "binding_name": e.binding_name,
            }
            for e in entries
        ]
        insert_rows(self.session.connection(), table_of(FailoverHistoryRow), rows)

    def list(
        self,
        *,
        binding_uid: str | None = None,
        cluster: str | None = None,
        namespace: str | None = None,
        actions: Sequence[str] = (),
        limit: int = 500,
    ) -> list[HistoryEntry]:
        """Newest first, filtered by binding, cluster, binding namespace and actions."""
        statement = select(FailoverHistoryRow)
        if binding_uid is not None:
            statement = statement.where(FailoverHistoryRow.binding_uid == binding_uid)
        if cluster is not None:
            statement = statement.where(FailoverHistoryRow.cluster == cluster)
        if namespace is not None:
            statement = statement.where(FailoverHistoryRow.binding_namespace == namespace)
        if actions:
            statement = statement.where(FailoverHistoryRow.action.in_(list(actions)))
        newest_first = (FailoverHistoryRow.at.desc(), FailoverHistoryRow.id.desc())
        statement = statement.order_by(*newest_first).limit(limit)
        return [HistoryEntry.from_row(row) for row in self.session.scalars(statement)]

    def counts(self, action: str) -> dict[str, int]:
        """reason → number of rows with ``action`` (for metrics: evictions by reason)."""
        statement = (
            select(FailoverHistoryRow.reason, func.count())
            .where(FailoverHistoryRow.action == action)
            .group_by(FailoverHistoryRow.reason)
        )
        return {str(reason): int(count) for reason, count in self.session.execute(statement)}
