"""Kubernetes-style events with count deduplication.

Invariants:
- A repeat of the same (involved object, type, reason, message) is one upsert that bumps ``count`` and
  ``last_timestamp``; concurrent recorders cannot create duplicates (``dedup_key`` is unique).
- Reading (``EventQuery``) pages by ``id`` (keyset, never OFFSET) with filters that are column comparisons,
  so a page is one indexed query whatever the table holds.
- Retention deletes in bounded batches (``prune``, ``trim``): one statement never locks the whole table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from federation.store import dialect, retention
from federation.store.bulkrows import OnConflict, insert_rows
from federation.store.tables import EventRow, table_of

EVENT_TYPES = frozenset({"Normal", "Warning"})
# An event seen again is counted on its row (its dedup key: object, type, reason, message).
REPEATED = OnConflict(keys=("dedup_key",), add=("count",), replace=("last_timestamp",))


@dataclass(frozen=True, slots=True)
class InvolvedObject:
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> InvolvedObject:
        """The object a manifest is (kind, name, namespace, uid), read defensively."""
        meta = obj.get("metadata") or {}
        return cls(
            str(obj.get("kind") or ""),
            str(meta.get("name") or ""),
            str(meta.get("namespace") or ""),
            str(meta.get("uid") or ""),
        )


@dataclass(frozen=True, slots=True)
class EventEntry:
    """One event to record in a batch (``EventRepository.record_many``)."""

    involved: InvolvedObject
    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Event:
    involved: InvolvedObject
    type: str
    reason: str
    message: str
    count: int
    first_timestamp: datetime
    last_timestamp: datetime
    source: str = ""
    id: int = 0

    @classmethod
    def from_row(cls, row: EventRow) -> Event:
        involved = InvolvedObject(
            row.involved_kind, row.involved_name, row.involved_namespace, row.involved_uid
        )
        return cls(
            involved=involved,
            type=row.type,
            reason=row.reason,
            message=row.message,
            count=row.count,
            first_timestamp=row.first_timestamp,
            last_timestamp=row.last_timestamp,
            source=row.source,
            id=row.id,
        )


def dedup_key(involved: InvolvedObject, type_: str, reason: str, message: str) -> str:
    fields = [involved.kind, involved.namespace, involved.name, involved.uid, type_, reason, message]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


class EventRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def record(
        self,
        involved: InvolvedObject,
        type_: str,
        reason: str,
        message: str,
        *,
        now: datetime,
        source: str = "",
    ) -> Event:
        """Record an event, or count a repeat of an identical one."""
        if type_ not in EVENT_TYPES:
            raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
        table = table_of(EventRow)
        key = dedup_key(involved, type_, reason, message)
        statement = dialect.insert(self.session, table).values(
            dedup_key=key,
            involved_kind=involved.kind,
            involved_namespace=involved.namespace,
            involved_name=involved.name,
            involved_uid=involved.uid,
            type=type_,
            reason=reason,
            message=message,
            source=source,
            count=1,
            first_timestamp=now,
            last_timestamp=now,
        )
        statement = statement.on_conflict_do_update(
            index_elements=["dedup_key"],
            set_={"count": table.c.count + 1, "last_timestamp": statement.excluded.last_timestamp},
        )
        self.session.execute(statement)
        row = self.session.scalars(
            select(EventRow).where(EventRow.dedup_key == key).execution_options(populate_existing=True)
        ).one()
        return Event.from_row(row)

    def record_many(self, entries: Sequence[EventEntry], *, now: datetime, source: str = "") -> None:
        """``record`` for a batch as one upsert (repeats in it counted once each); nothing
        is read back."""
        counted: dict[str, tuple[EventEntry, int]] = {}
        for entry in entries:
            if entry.type not in EVENT_TYPES:
                raise ValueError(f"event type must be Normal or Warning, not {entry.type!r}")
            key = dedup_key(entry.involved, entry.type, entry.reason, entry.message)
            seen = counted.get(key)
            counted[key] = (entry, 1 if seen is None else seen[1] + 1)
        values = [
            {
                "dedup_key": key,
                "involved_kind": entry.involved.kind,
                "involved_namespace": entry.involved.namespace,
                "involved_name": entry.involved.name,
                "involved_uid": entry.involved.uid,
                "type": entry.type,
                "reason": entry.reason,
                "message": entry.message,
                "source": source,
                "count": count,
                "first_timestamp": now,
                "last_timestamp": now,
            }
            for key, (entry, count) in counted.items()
        ]
        if not values:
            return
        insert_rows(self.session.connection(), table_of(EventRow), values, REPEATED)

    def for_object(self, kind: str, namespace: str, name: str) -> list[Event]:
        """Events about one object, oldest first (as ``describe`` prints them)."""
        statement = (
            select(EventRow)
            .where(
                EventRow.involved_kind == kind,
                EventRow.involved_namespace == namespace,
                EventRow.involved_name == name,
            )
            .order_by(EventRow.last_timestamp, EventRow.id)
        )
        return [Event.from_row(row) for row in self.session.scalars(statement)]

    def recent(self, limit: int = 100) -> list[Event]:
        statement = select(EventRow).order_by(EventRow.last_timestamp.desc(), EventRow.id.desc()).limit(limit)
        return [Event.from_row(row) for row in self.session.scalars(statement)]

    def list(self, query: EventQuery) -> tuple[list[Event], int | None]:
        """One page of the events ``query`` selects, in recording order, and the id to continue after (None
        on the last page)."""
        statement = select(EventRow).where(*query.conditions()).order_by(EventRow.id)
        rows = list(self.session.scalars(statement.limit(query.limit + 1)))
        more = len(rows) > query.limit
        rows = rows[: query.limit]
        return [Event.from_row(row) for row in rows], (rows[-1].id if more and rows else None)

    def get(self, event_id: int) -> Event | None:
        row = self.session.get(EventRow, event_id)
        return None if row is None else Event.from_row(row)

    def prune(self, before: datetime, batch: int = 1000) -> int:
        """Delete at most ``batch`` events last seen before ``before`` (oldest first); returns how many."""
        return retention.prune_before(self.session, EventRow, EventRow.last_timestamp, before, batch)

    def trim(self, keep: int, batch: int = 1000) -> int:
        """Delete at most ``batch`` of the events beyond the ``keep`` most recently seen; returns how many."""
        return retention.trim_to(self.session, EventRow, EventRow.last_timestamp, keep, batch)


# Event fields a query can compare, by the column that holds them.
QUERY_COLUMNS = {
    "kind": EventRow.involved_kind,
    "namespace": EventRow.involved_namespace,
    "name": EventRow.involved_name,
    "uid": EventRow.involved_uid,
    "type": EventRow.type,
    "reason": EventRow.reason,
    "source": EventRow.source,
}
# Events about cluster-scoped objects live in this namespace, as kube-apiserver records them.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class EventQuery:
    """Which events to read: those in ``namespace`` (None: all), matching every ``(field, equal, value)``
    comparison (fields of ``QUERY_COLUMNS``), after ``after_id``, at most ``limit``."""

    namespace: str | None = None
    comparisons: tuple[tuple[str, bool, str], ...] = ()
    after_id: int = 0
    limit: int = 500

    def conditions(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = [EventRow.id > self.after_id]
        if self.namespace is not None:
            found.append(in_event_namespace(self.namespace))
        for field, equal, value in self.comparisons:
            column = QUERY_COLUMNS[field]
            found.append(column == value if equal else column != value)
        return found


def in_event_namespace(namespace: str) -> ColumnElement[bool]:
    """Events whose namespace is ``namespace``: about objects in it, and for ``default`` also about
    cluster-scoped objects."""
    if namespace == CLUSTER_SCOPED_EVENT_NAMESPACE:
        return EventRow.involved_namespace.in_(("", namespace))
    return EventRow.involved_namespace == namespace
