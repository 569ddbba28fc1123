"""Claiming dirty rows (bindings to schedule, works to sync) so many controller replicas share the work.

Invariants:
- A claim is one statement: ``UPDATE t SET claimed_by, claimed_until WHERE id IN (SELECT id ... ORDER BY id
  LIMIT n FOR UPDATE SKIP LOCKED) RETURNING ...``. On Postgres concurrent claimers skip each other's
  locked rows and get disjoint sets; SQLite has no row locks but serializes writers, and the statement
  is a write, so it is atomic there too.
- A row is claimable when its dirty flag is set, it is unclaimed or its claim expired, and its
  ``next_attempt_at`` (retry back-off) has passed. Order is by id: oldest first, stable.
- Claim columns are bookkeeping: these statements never bump ``resource_version``.
- ``release(done=True)`` clears the dirty flag only if ``dirty_seq`` is unchanged since the claim, so a
  change made while the worker ran is not lost; the claim itself is always released.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Table, bindparam, or_, select, update
from sqlalchemy.orm import Session

from federation.store.tables import (
    ClusterPropagationPolicyRow,
    ClusterRow,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkRow,
    table_of,
)

Claimable = (
    type[ResourceBindingRow]
    | type[WorkRow]
    | type[ResourceTemplateRow]
    | type[PropagationPolicyRow]
    | type[ClusterPropagationPolicyRow]
    | type[ClusterRow]
)


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed row: enough to load it and to release it."""

    id: int
    uid: str
    kind: str
    namespace: str
    name: str
    dirty_seq: int


def claim(
    session: Session,
    table: Claimable,
    owner: str,
    limit: int,
    now: datetime,
    lease_seconds: float,
    *,
    where: Sequence[ColumnElement[bool]] = (),
) -> list[Claim]:
    """Claim up to ``limit`` rows needing work for ``owner`` until ``now + lease_seconds``.

    ``where`` narrows the candidates further (conditions on ``table_of(table)``'s columns).
    """
    t = table_of(table)
    candidates = (
        select(t.c.id)
        .where(
            t.c[table.dirty_flag].is_(True),
            or_(t.c.claimed_by.is_(None), t.c.claimed_until <= now),
            or_(t.c.next_attempt_at.is_(None), t.c.next_attempt_at <= now),
            *where,
        )
        .order_by(t.c.id)
        .limit(limit)
        .with_for_update(skip_locked=True)  # rendered on Postgres; SQLite ignores it
    )
    statement = (
        update(t)
        .where(t.c.id.in_(candidates.scalar_subquery()))
        .values(claimed_by=owner, claimed_until=now + timedelta(seconds=lease_seconds))
        .returning(t.c.id, t.c.uid, t.c.kind, t.c.namespace, t.c.name, t.c.dirty_seq)
    )
    rows = session.execute(statement).all()
    # RETURNING order is unspecified; restore the claim order.
    return sorted((Claim(*row) for row in rows), key=lambda c: c.id)


def release(
    session: Session,
    table: Claimable,
    claims: Sequence[Claim],
    owner: str,
    *,
    done: bool,
    retry_at: datetime | None = None,
) -> None:
    """Give claims back: ``done`` clears the dirty flag (if unchanged); otherwise retry at ``retry_at``."""
    if not claims:
        return
    t = table_of(table)
    if done:
        _clear_dirty(session, t, table.dirty_flag, claims, owner)
    statement = (
        update(t)
        .where(t.c.id.in_([c.id for c in claims]), t.c.claimed_by == owner)
        .values(claimed_by=None, claimed_until=None, next_attempt_at=None if done else retry_at)
    )
    session.execute(statement)


def _clear_dirty(session: Session, t: Table, flag: str, claims: Sequence[Claim], owner: str) -> None:
    statement = (
        update(t)
        .where(
            t.c.id == bindparam("claim_id"),
            t.c.dirty_seq == bindparam("claim_seq"),
            t.c.claimed_by == owner,
        )
        .values({flag: False})
    )
    params: list[dict[str, Any]] = [{"claim_id": c.id, "claim_seq": c.dirty_seq} for c in claims]
    session.execute(statement, params)


def mark_dirty(session: Session, table: Claimable, ids: Sequence[int]) -> None:
    """Queue rows for their controller without touching their API state (no resourceVersion bump)."""
    if not ids:
        return
    t = table_of(table)
    statement = (
        update(t)
        .where(t.c.id.in_(list(ids)))
        .values({table.dirty_flag: True, "dirty_seq": t.c.dirty_seq + 1, "next_attempt_at": None})
    )
    session.execute(statement)
