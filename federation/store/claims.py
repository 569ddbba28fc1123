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
- Queueing a row is always the same three assignments, written as SQL expressions (``queue_values``):
  flag := TRUE, ``dirty_seq := dirty_seq + 1``, back-off cancelled. Never a Python ``True`` on a loaded
  ORM row: the ORM leaves an attribute out of its UPDATE when the value it *loaded* was already True,
  so a worker's clear that committed in between would win and the change would be lost (the flag
  False while ``dirty_seq`` moved). An expression is always written.
- Claims are renewed while the pass that took them runs (``renew``, from the runner's lease job), so a
  long item keeps its claim and a dead process's claims run out within ``lease_seconds``; a new leader
  drops the claims of the old one at once (``void_others``).
- A worker that fails on one row releases it with ``fail``: ``failures`` counts consecutive failures and
  sets an exponential back-off; any success (``release(done=True)``) resets it, and a new change
  (``queue_values``) cancels the back-off so an edit is looked at at once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Table, exists, or_, select, true, update
from sqlalchemy.orm import Session

from federation.store.bulkrows import update_rows
from federation.store.dialect import among, is_postgres
from federation.store.tables import (
    ClaimMixin,
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
    failures: int = 0


def queue_values(table: type[ClaimMixin]) -> dict[str, Any]:
    """The column values that queue a row for its controller, as SQL expressions (see the invariants).
    The expressions are the same objects on every call (a batch writer groups its rows by them)."""
    values = _QUEUE_VALUES.get(table)
    if values is None:
        t = table_of(table)
        values = _QUEUE_VALUES[table] = {
            table.dirty_flag: true(),
            "dirty_seq": t.c.dirty_seq + 1,
            "next_attempt_at": None,
        }
    return dict(values)


_QUEUE_VALUES: dict[type[ClaimMixin], dict[str, Any]] = {}


def created_values(table: type[ClaimMixin]) -> dict[str, Any]:
    """The queue columns of a new row: queued for its controller, counted once, no retry back-off."""
    return {table.dirty_flag: True, "dirty_seq": 1, "next_attempt_at": None}


def claim(
    session: Session,
    table: Claimable,
    owner: str,
    limit: int,
    now: datetime,
    lease_seconds: float,
    *,
    where: Sequence[ColumnElement[bool]] = (),
    holder: int | None = None,
) -> list[Claim]:
    """Claim up to ``limit`` rows needing work for ``owner`` until ``now + lease_seconds``.

    ``where`` narrows the candidates further (conditions on ``table_of(table)``'s columns); ``holder`` as
    in ``claim_rows``.
    """
    claimed = claim_rows(session, table, owner, limit, now, lease_seconds, where=where, holder=holder)
    return [c for c, _ in claimed]


# What a ``Claim`` holds, in its fields' order.
_CLAIM_COLUMNS = ("id", "uid", "kind", "namespace", "name", "dirty_seq", "failures")


def claim_rows(
    session: Session,
    table: Claimable,
    owner: str,
    limit: int,
    now: datetime,
    lease_seconds: float,
    *,
    where: Sequence[ColumnElement[bool]] = (),
    columns: Sequence[str] = (),
    holder: int | None = None,
) -> list[tuple[Claim, Any]]:
    """``claim``, each claim with its row as claimed: a Core row of the claim's columns and ``columns``
    (by attribute), from the same statement (``RETURNING``), so a worker that reads its rows whole needs no
    SELECT after the claim. ``holder``: the thread whose pass holds the claims (``HOLDINGS``), when another
    thread claims for it."""
    t = table_of(table)
    candidates = (
        select(t.c.id)
        .where(*_claimable(table, now), *where)
        .order_by(t.c.id)
        .limit(limit)
        .with_for_update(skip_locked=True)  # rendered on Postgres; SQLite ignores it
    )
    extra = [t.c[name] for name in columns if name not in _CLAIM_COLUMNS]
    statement = (
        update(t)
        .where(t.c.id.in_(candidates.scalar_subquery()))
        .values(claimed_by=owner, claimed_until=now + timedelta(seconds=lease_seconds))
        .returning(*(t.c[name] for name in _CLAIM_COLUMNS), *extra)
    )
    rows = session.execute(statement).all()
    HOLDINGS.add(owner, table, [row.id for row in rows], thread=holder)
    # RETURNING order is unspecified; restore the claim order.
    claimed = [(Claim(*row[: len(_CLAIM_COLUMNS)]), row) for row in rows]
    return sorted(claimed, key=lambda pair: pair[0].id)


def claimable(
    table: Claimable, now: datetime, *, where: Sequence[ColumnElement[bool]] = ()
) -> ColumnElement[bool]:
    """Whether ``claim`` would find a row now, as an EXISTS a caller can select with others (the runner's
    idle probe): the same conditions, read-only, so an idle tick takes no lock and writes nothing."""
    t = table_of(table)
    return exists().where(*_claimable(table, now), *where).select_from(t)


def _claimable(table: Claimable, now: datetime) -> tuple[ColumnElement[bool], ...]:
    t = table_of(table)
    return (
        t.c[table.dirty_flag].is_(True),
        or_(t.c.claimed_by.is_(None), t.c.claimed_until <= now),
        or_(t.c.next_attempt_at.is_(None), t.c.next_attempt_at <= now),
    )


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
    if done and is_postgres(session):
        _release_done(session, t, table.dirty_flag, claims, owner)
        HOLDINGS.remove(owner, table, [c.id for c in claims])
        return
    if done:
        _clear_dirty(session, t, table.dirty_flag, claims, owner)
    statement = (
        update(t)
        .where(among(session, t.c.id, [c.id for c in claims]), t.c.claimed_by == owner)
        .values(claimed_by=None, claimed_until=None, next_attempt_at=None if done else retry_at)
    )
    if done:
        statement = statement.values(failures=0)
    session.execute(statement)
    HOLDINGS.remove(owner, table, [c.id for c in claims])


def fail(
    session: Session, table: Claimable, item: Claim, owner: str, now: datetime, backoff: Backoff
) -> datetime:
    """Give back a claim whose item failed: count the failure and retry after an exponential back-off.

    Returns the time of the next attempt. The dirty flag stays set, so the row is retried.
    """
    retry_at = now + timedelta(seconds=backoff.delay(item.failures + 1))
    t = table_of(table)
    statement = (
        update(t)
        .where(t.c.id == item.id, t.c.claimed_by == owner)
        .values(claimed_by=None, claimed_until=None, next_attempt_at=retry_at, failures=t.c.failures + 1)
    )
    session.execute(statement)
    HOLDINGS.remove(owner, table, [item.id])
    return retry_at


@dataclass(frozen=True, slots=True)
class Backoff:
    """``initial * 2^(n-1)`` seconds after the n-th consecutive failure, capped at ``maximum``."""

    initial: float = 1.0
    maximum: float = 300.0

    def delay(self, failures: int) -> float:
        exponent = min(max(failures - 1, 0), 32)
        return float(min(self.maximum, self.initial * 2**exponent))


def _release_done(session: Session, t: Table, flag: str, claims: Sequence[Claim], owner: str) -> None:
    """``release(done=True)`` as one statement on Postgres (the row is written once, not twice): each claim
    given back with its back-off and failure count reset, its dirty flag cleared only where ``dirty_seq`` is
    still the one it was claimed at. Elsewhere ``_clear_dirty`` and the release are two statements."""
    connection = session.connection()
    quote = connection.dialect.identifier_preparer.quote
    target = connection.dialect.identifier_preparer.format_table(t)
    id_type = t.c.id.type.compile(dialect=connection.dialect)
    column = quote(flag)
    sql = (
        f"UPDATE {target} SET {column} = CASE WHEN {target}.dirty_seq = v.seq THEN false "
        f"ELSE {target}.{column} END, claimed_by = NULL, claimed_until = NULL, next_attempt_at = NULL, "
        f"failures = 0 FROM unnest(CAST(%(ids)s AS {id_type}[]), CAST(%(seqs)s AS INTEGER[])) AS v(id, seq) "
        f"WHERE {target}.id = v.id AND {target}.claimed_by = %(owner)s"
    )
    params = {"ids": [c.id for c in claims], "seqs": [c.dirty_seq for c in claims], "owner": owner}
    connection.exec_driver_sql(sql, params)


def _clear_dirty(session: Session, t: Table, flag: str, claims: Sequence[Claim], owner: str) -> None:
    """Clear the dirty flag of each claimed row not queued again since it was claimed (its ``dirty_seq``
    unchanged): one statement for the lot (``bulkrows``), not one per row."""
    rows = [((c.id, c.dirty_seq, owner), {flag: False}) for c in claims]
    update_rows(session.connection(), t, ("id", "dirty_seq", "claimed_by"), rows)


def mark_dirty(session: Session, table: Claimable, ids: Sequence[int]) -> None:
    """Queue rows for their controller without touching their API state (no resourceVersion bump)."""
    if not ids:
        return
    t = table_of(table)
    session.execute(update(t).where(among(session, t.c.id, ids)).values(queue_values(table)))


CLAIMABLE: tuple[Claimable, ...] = (
    ResourceTemplateRow,
    PropagationPolicyRow,
    ClusterPropagationPolicyRow,
    ResourceBindingRow,
    WorkRow,
    ClusterRow,
)


class _Holdings:
    """The claims this process holds, per owner and per thread (a controller pass runs in one thread), so
    they can be renewed while the pass works on them and forgotten when it ends (``forget_thread``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, int], dict[Claimable, set[int]]] = {}

    def add(self, owner: str, table: Claimable, ids: Sequence[int], *, thread: int | None = None) -> None:
        """Held by ``thread``'s pass (the calling thread's by default)."""
        with self._lock:
            key = (owner, threading.get_ident() if thread is None else thread)
            self._held.setdefault(key, {}).setdefault(table, set()).update(ids)

    def remove(self, owner: str, table: Claimable, ids: Sequence[int]) -> None:
        """From whichever of the owner's threads holds them: a pass may hand its releases to a thread of
        its own (the scheduler's batch writes)."""
        with self._lock:
            for (who, _thread), tables in self._held.items():
                held = tables.get(table) if who == owner else None
                if held:
                    held.difference_update(ids)

    def of(self, owner: str) -> dict[Claimable, list[int]]:
        with self._lock:
            merged: dict[Claimable, set[int]] = {}
            for (who, _thread), tables in self._held.items():
                if who == owner:
                    for table, ids in tables.items():
                        merged.setdefault(table, set()).update(ids)
            return {table: sorted(ids) for table, ids in merged.items() if ids}

    def forget_thread(self, owner: str) -> None:
        with self._lock:
            self._held.pop((owner, threading.get_ident()), None)


HOLDINGS = _Holdings()


def forget_held(owner: str) -> None:
    """The calling thread's pass is over: stop renewing the claims it still holds. A claim it did not give
    back (the pass raised before its release) then runs out and the item is retried, as before renewal."""
    HOLDINGS.forget_thread(owner)


def renew(session: Session, owner: str, now: datetime, lease_seconds: float) -> int:
    """Extend the unexpired claims ``owner``'s running passes hold, so an item keeps its claim however long
    its work takes, while a dead process's claims run out. By primary key, one UPDATE per table that
    has held claims; none at all when nothing is held (an idle federation).

    The rows are locked in id order and a row another transaction holds is skipped (``SKIP LOCKED``), not
    waited for: a pass writing its batch holds those rows while the renewal wants them too, and waiting
    took the two into deadlocks (seen at 10,000 bindings: the renewal or the pass aborted). A skipped row
    is being written by the pass that claimed it, which releases it or is renewed next time."""
    renewed = 0
    for table, ids in HOLDINGS.of(owner).items():
        t = table_of(table)
        held = (
            select(t.c.id)
            .where(among(session, t.c.id, ids), t.c.claimed_by == owner, t.c.claimed_until > now)
            .order_by(t.c.id)
            .with_for_update(skip_locked=True)
        )
        statement = (
            update(t).where(t.c.id.in_(held)).values(claimed_until=now + timedelta(seconds=lease_seconds))
        )
        renewed += session.execute(statement).rowcount  # type: ignore[attr-defined]
    return renewed


def void_others(session: Session, owner: str) -> int:
    """Drop every claim held by anyone but ``owner`` (one UPDATE per table). Run by a new leader: only
    the leader claims, so any other claim belongs to a leader that is gone or fenced off, and its items
    need not wait for the claims to expire. Dirty flags and back-off stay as they are."""
    voided = 0
    for row_type in CLAIMABLE:
        t = table_of(row_type)
        statement = (
            update(t)
            .where(t.c.claimed_by.is_not(None), t.c.claimed_by != owner)
            .values(claimed_by=None, claimed_until=None)
        )
        voided += session.execute(statement).rowcount  # type: ignore[attr-defined]
    return voided
