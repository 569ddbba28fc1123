"""New Works and Work tombstones written as column values, without ORM objects (the execution controller's
batch writes).

Why: a rebalance or a failover makes one execution batch write thousands of Works: new ones on the clusters
that gained replicas, tombstones on those that lost them. An ORM object per new Work, two copies of its JSON
(the row's and its change-log event's) and every tombstoned Work loaded whole as an ORM row were most of the
batch's CPU. Here a new Work is one dict of column values plus an event manifest sharing the rendered JSON
(the driver serializes both; nothing mutates either), and a tombstone is computed from its ``WorkSummary``
and the Work's columns read by one Core SELECT.

Invariants:
- The same rows and change-log events as ``ObjectRepository.create`` (insert) and as a ``replace`` with
  ``rendering.tombstoned`` (tombstone): tests compare the two paths column by column.
- ``insert_new`` takes ownership of the rendered Works it is given (their JSON goes to the database as is).
- A Work carrying a Secret never goes through ``insert_new``: its data is sealed by the ORM flush's hooks
  (``spec_carries_secret``). Tombstones need no such care: the event is built from the stored (sealed)
  columns and logged as sealed.
- Each tombstone's UPDATE checks the resourceVersion the summary was read at; a Work changed meanwhile
  (the SELECT or the UPDATE sees another version) raises ``Conflict``, as the ORM flush would.
- Neither autoflushes: the caller's pending ORM rows stay for its own batch write (``bulkflush``).
- Tombstoned Works are queued for sync: the deletion must reach the member. A tombstoned Work the session
  had loaded is expired (the UPDATE bypassed the ORM).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store import bulkflush, changelog, claims
from federation.store.bulkrows import UpdateRow, update_rows
from federation.store.derive import work_columns
from federation.store.dialect import among
from federation.store.errors import Conflict
from federation.store.kinds import WORK_API_VERSION
from federation.store.manifest import new_row_values, split, view
from federation.store.sealing import is_secret
from federation.store.tables import WorkRow, table_of

KIND = "Work"


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A Work to tombstone: its row id and name, the resourceVersion its summary was read at, and the
    extra metadata it gets (``rendering.tombstoned_extra``)."""

    id: int
    namespace: str
    name: str
    seen_version: int
    metadata_extra: dict[str, Any]


def spec_carries_secret(spec: Any) -> bool:
    """Whether a Work spec's manifests include a v1 Secret."""
    workload = spec.get("workload") if isinstance(spec, Mapping) else None
    manifests = (workload.get("manifests") if isinstance(workload, Mapping) else None) or []
    return any(isinstance(m, Mapping) and is_secret(m) for m in manifests)


def insert_new(session: Session, works: Sequence[tuple[Mapping[str, Any], int | None]], now: datetime) -> int:
    """Insert rendered Works (each with its binding's row id) by one statement, with their ADDED events
    and revisions; the Works inserted. A duplicate name fails the statement (``IntegrityError``)."""
    if not works:
        return 0
    # No Secret comes here (``insertable``): the events are logged as the rows hold them.
    rows = [_values(work, binding_id, now) for work, binding_id in works]
    return len(changelog.insert_added(session, WorkRow, rows))


def _values(work: Mapping[str, Any], binding_id: int | None, now: datetime) -> dict[str, Any]:
    parts = split(work, copy=False)
    if parts.kind != KIND:
        raise ValueError(f"kind: expected {KIND}, got {parts.kind!r}")
    return {
        **new_row_values(parts, KIND, WORK_API_VERSION, now),
        **work_columns(parts.namespace, parts.spec, parts.status),
        "binding_id": binding_id,
        **claims.created_values(WorkRow),  # ``derive.mark_dirty(created=True)``: queued for sync
    }


def tombstone(session: Session, marked: Sequence[Tombstone], now: datetime) -> None:
    """Give these Works their tombstone's extra metadata by one UPDATE, each queued for sync
    and logged as MODIFIED at its own new revision; ``Conflict`` if one changed since it was summarised."""
    if not marked:
        return
    with session.no_autoflush:  # an autoflush would write the caller's pending rows one by one
        _tombstone(session, marked, now)


def _tombstone(session: Session, marked: Sequence[Tombstone], now: datetime) -> None:
    stored = _stored_rows(session, marked)
    changes = [
        changelog.Change(changelog.MODIFIED, _tombstoned(stored[m.id], m), sealed=True) for m in marked
    ]
    revisions = changelog.record(session, changes)
    rows: list[UpdateRow] = [
        ((m.id, m.seen_version), {"metadata_extra": m.metadata_extra, "resource_version": revision})
        for m, revision in zip(marked, revisions, strict=True)
    ]
    shared = {"updated_at": now, **claims.queue_values(WorkRow)}
    matched = update_rows(session.connection(), table_of(WorkRow), ("id", "resource_version"), rows, shared)
    if matched != len(rows):
        raise Conflict(KIND, marked[0].namespace, marked[0].name, "a Work changed while it was tombstoned")
    bulkflush.expire_loaded(session, WorkRow, (m.id for m in marked))


def _stored_rows(session: Session, marked: Sequence[Tombstone]) -> dict[int, Any]:
    """The stored columns an event renders, by row id (Core rows: no ORM state, JSON fresh from the
    driver); ``Conflict`` for a Work gone or at another version than its summary."""
    t = table_of(WorkRow)
    ids = sorted({m.id for m in marked})
    statement = select(*(t.c[name] for name in _EVENT_COLUMNS)).where(among(session, t.c.id, ids))
    rows = {row.id: row for row in session.execute(statement)}
    for m in marked:
        row = rows.get(m.id)
        if row is None or row.resource_version != m.seen_version:
            raise Conflict(KIND, m.namespace, m.name, "the Work changed while its binding was planned")
    return rows


_EVENT_COLUMNS = ("id", "resource_version", *changelog.MANIFEST_ATTRIBUTES)


def _tombstoned(row: Any, marked: Tombstone) -> dict[str, Any]:
    """The stored manifest of ``row`` with its extra metadata replaced by the tombstone's."""
    manifest = view(row)
    meta = manifest["metadata"]  # a fresh dict: its keys can change without touching ``row``
    for key in row.metadata_extra or {}:
        meta.pop(key, None)
    meta.update(marked.metadata_extra)
    return manifest


__all__ = ["Tombstone", "insert_new", "spec_carries_secret", "tombstone"]
