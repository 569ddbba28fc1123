"""Scheduling decision history: append-only, newest first, queryable by binding, time and result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store import retention
from federation.store.bulkrows import insert_rows
from federation.store.tables import SchedulingDecisionRow, table_of


@dataclass(frozen=True, slots=True)
class Decision:
    """One scheduling attempt for one binding and its explanation."""

    binding_uid: str
    binding_kind: str
    binding_namespace: str
    binding_name: str
    result: str
    created_at: datetime
    message: str = ""
    clusters: list[dict[str, Any]] = field(default_factory=list)
    explanation: dict[str, Any] = field(default_factory=dict)
    binding_generation: int | None = None
    id: int | None = None

    @classmethod
    def from_row(cls, row: SchedulingDecisionRow) -> Decision:
        return cls(
            id=row.id,
            binding_uid=row.binding_uid,
            binding_kind=row.binding_kind,
            binding_namespace=row.binding_namespace,
            binding_name=row.binding_name,
            binding_generation=row.binding_generation,
            result=row.result,
            message=row.message,
            clusters=list(row.clusters or []),
            explanation=dict(row.explanation or {}),
            created_at=row.created_at,
        )


class DecisionRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def prune(self, before: datetime, batch: int = 1000) -> int:
        """Delete at most ``batch`` decisions made before ``before`` (oldest first); returns how many."""
        row = SchedulingDecisionRow
        return retention.prune_before(self.session, row, row.created_at, before, batch)

    def trim(self, keep: int, batch: int = 1000) -> int:
        """Delete at most ``batch`` of the decisions beyond the ``keep`` newest; returns how many."""
        row = SchedulingDecisionRow
        return retention.trim_to(self.session, row, row.created_at, keep, batch)

    def append(self, decision: Decision) -> Decision:
        row = _row_of(decision)
        self.session.add(row)
        self.session.flush()
        return Decision.from_row(row)

    def append_many(self, decisions: Sequence[Decision]) -> None:
        """Append a batch: one INSERT (no ORM objects, nothing read back)."""
        rows = [_values_of(d) for d in decisions]
        insert_rows(self.session.connection(), table_of(SchedulingDecisionRow), rows)

    def latest(self, binding_uid: str) -> Decision | None:
        found = self.history(binding_uid=binding_uid, limit=1)
        return found[0] if found else None

    def history(
        self,
        *,
        binding_uid: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        result: str | None = None,
        since: datetime | None = None,
        limit: int | None = 100,
    ) -> list[Decision]:
        """Decisions matching every given filter, newest first."""
        t = SchedulingDecisionRow
        equal = {
            t.binding_uid: binding_uid,
            t.binding_namespace: namespace,
            t.binding_name: name,
            t.result: result,
        }
        conditions = [column == value for column, value in equal.items() if value is not None]
        if since is not None:
            conditions.append(t.created_at >= since)
        statement = select(t).where(*conditions)
        statement = statement.order_by(t.created_at.desc(), t.id.desc()).limit(limit)
        return [Decision.from_row(row) for row in self.session.scalars(statement)]


def _row_of(decision: Decision) -> SchedulingDecisionRow:
    return SchedulingDecisionRow(**_values_of(decision))


def _values_of(decision: Decision) -> dict[str, Any]:
    return dict(
        binding_uid=decision.binding_uid,
        binding_kind=decision.binding_kind,
        binding_namespace=decision.binding_namespace,
        binding_name=decision.binding_name,
        binding_generation=decision.binding_generation,
        result=decision.result,
        message=decision.message,
        clusters=list(decision.clusters),
        explanation=dict(decision.explanation),
        created_at=decision.created_at,
    )
