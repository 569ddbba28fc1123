"""Writing the change log: every write that changes what a GET returns takes the next global revision and
records its event, in the writer's transaction.

Invariants:
- One hook (``before_flush`` on every ``Session``) covers every ORM write of an API object, batched or
  not: the rows a flush inserts (ADDED) and the rows whose manifest columns it changes (MODIFIED) get
  their revisions from one statement and their log rows from one INSERT (``bulkrows``), before the
  flush writes the objects. A flush that changes only bookkeeping (claims, dirty flags, derived columns)
  takes no revision.
- Writes that bypass the ORM call ``record`` themselves (tombstones) or go through ``delete_returning``
  (deletions: the log gets the state the DELETE removed, whatever a concurrent writer made it).
- A DELETED event carries the object's last state at the revision of its deletion, as etcd's watch does.
- On Postgres a writer has a transaction id and a lock on ``change_log`` before it draws a revision, and
  keeps both until it ends: ``changefeed`` relies on it to know whether a missing revision may still commit.
  The sequence hands out values in time order (no CACHE).
- Secret data in the log is sealed like the object tables' copy (``sealing.seal_manifest``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, cast

from sqlalchemy import ColumnElement, Row, delete, event, inspect, text
from sqlalchemy.orm import Session, UOWTransaction
from sqlalchemy.orm.attributes import NO_VALUE

from federation.store.bulkrows import insert_rows
from federation.store.dialect import is_postgres
from federation.store.manifest import join, view
from federation.store.sealing import SECRET_BOX, seal_manifest
from federation.store.tables import ChangeLogRow, ObjectMixin, RevisionCounterRow, table_of
from federation.store.tables.changelog import ADDED, DELETED, MODIFIED, RESOURCE_VERSION_SEQUENCE
from federation.store.types import utcnow

# The columns a GET renders: a change to any other column is bookkeeping and takes no revision.
MANIFEST_ATTRIBUTES = (
    "api_version",
    "kind",
    "namespace",
    "name",
    "uid",
    "generation",
    "labels",
    "annotations",
    "metadata_extra",
    "spec",
    "status",
    "extra",
    "created_at",
)
# What a column-value writer reads of a stored object: its row id, its version and every column a GET renders.
ROW_COLUMNS = ("id", "resource_version", *MANIFEST_ATTRIBUTES)

# Before ``nextval`` runs (a one-time filter, and a lock taken when the statement is planned) the writer
# has a transaction id and holds a lock on ``change_log``: ``changefeed`` finds the writers that may still
# commit a revision by exactly that. The lookup finds nothing by design; it is an equality on the primary
# key so that it is one index probe whatever the planner knows (``revision < 0`` was planned as a scan of
# the whole log on a table never analyzed: 100 to 200 ms per write at 10,000 bindings).
_NEXTVAL = text(
    f"SELECT nextval('{RESOURCE_VERSION_SEQUENCE.name}') FROM generate_series(1, :count) "
    f"WHERE pg_current_xact_id() IS NOT NULL "
    f"AND NOT EXISTS (SELECT FROM {ChangeLogRow.__tablename__} WHERE revision = 0)"
)


@dataclass(frozen=True, slots=True)
class Change:
    """One event to log. ``manifest`` is in memory form (Secret data plaintext) unless ``sealed``."""

    event: str
    manifest: dict[str, Any]
    previous_labels: dict[str, Any] | None = None
    sealed: bool = False


def allocate(session: Session, count: int) -> list[int]:
    """The next ``count`` global revisions, ascending, in one statement."""
    if count <= 0:
        return []
    if is_postgres(session):
        return sorted(int(value) for value in session.execute(_NEXTVAL, {"count": count}).scalars())
    counter = table_of(RevisionCounterRow)
    # An upsert: a schema made by create_all (tests) has no counter row until the first write.
    statement = text(
        f"INSERT INTO {counter.name} (id, value) VALUES (1, :count) "
        "ON CONFLICT (id) DO UPDATE SET value = value + :count RETURNING value"
    )
    top = int(session.execute(statement, {"count": count}).scalar_one())
    return list(range(top - count + 1, top + 1))


def record(session: Session, changes: Sequence[Change]) -> list[int]:
    """Give each change the next revision (set into its manifest) and log them; the revisions, in order."""
    revisions = allocate(session, len(changes))
    if not changes:
        return revisions
    box = session.info.get(SECRET_BOX)
    now = utcnow()
    rows = []
    for change, revision in zip(changes, revisions, strict=True):
        change.manifest.setdefault("metadata", {})["resourceVersion"] = str(revision)
        stored = change.manifest if change.sealed else seal_manifest(change.manifest, box)
        rows.append(_log_row(revision, change, stored, now))
    insert_rows(session.connection(), table_of(ChangeLogRow), rows)
    return revisions


def insert_added(
    session: Session, model: type[ObjectMixin], rows: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Insert new rows given as column values (``manifest.new_row_values`` and their kind's own), each with
    its ADDED event and revision, by one statement after the log's; the objects as a GET renders them (views
    sharing the rows' JSON). For rows without Secret data (their events are logged as they are). A taken
    name fails the INSERT (``IntegrityError``). Never autoflushes."""
    with session.no_autoflush:  # an autoflush would write the caller's pending rows one by one
        manifests = [view(SimpleNamespace(**row)) for row in rows]  # type: ignore[arg-type]
        revisions = record(session, [Change(ADDED, manifest, sealed=True) for manifest in manifests])
        for row, revision in zip(rows, revisions, strict=True):
            row["resource_version"] = revision
        insert_rows(session.connection(), table_of(model), rows)
    return manifests


def _log_row(revision: int, change: Change, stored: dict[str, Any], now: Any) -> dict[str, Any]:
    meta = stored.get("metadata") or {}
    return {
        "revision": revision,
        "event": change.event,
        "api_version": str(stored.get("apiVersion") or ""),
        "kind": str(stored.get("kind") or ""),
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
        "object": stored,
        "previous_labels": change.previous_labels,
        "created_at": now,
    }


def delete_returning(
    session: Session, model: type[ObjectMixin], *conditions: ColumnElement[bool]
) -> list[Row[Any]]:
    """DELETE the rows of ``model`` matching ``conditions`` and log each as DELETED; the rows deleted.

    RETURNING gives the state the statement removed (stored form: Secret data still sealed), so the event
    is the last state even when a concurrent write landed between a caller's read and this delete.
    """
    table = table_of(model)
    statement = delete(table).where(*conditions).returning(*table.columns)
    gone = list(session.execute(statement))
    # A Row reads its columns as attributes, which is all ``join`` asks of a row.
    record(session, [Change(DELETED, join(cast(ObjectMixin, row)), sealed=True) for row in gone])
    return gone


# -- the flush hook ----------------------------------------------------------------------------------------


def _before_flush(session: Session, _flush: UOWTransaction, _instances: Iterable[Any] | None) -> None:
    # ``view``, not ``join``: ``record`` serialises each manifest at once and never changes what it shares
    # with the row (it sets the revision in the view's own metadata dict; sealing copies).
    changes: list[Change] = []
    rows: list[ObjectMixin] = []
    for row in session.new:
        if isinstance(row, ObjectMixin):
            rows.append(row)
            changes.append(Change(ADDED, view(row)))
    for row in session.dirty:
        if isinstance(row, ObjectMixin) and manifest_changed(row):
            rows.append(row)
            changes.append(Change(MODIFIED, view(row), previous_labels(row)))
    for row in session.deleted:
        if isinstance(row, ObjectMixin):  # ``Session.delete``: the repositories delete with SQL instead
            changes.append(Change(DELETED, view(row)))
    revisions = record(session, changes)
    for row, revision in zip(rows, revisions, strict=False):
        row.resource_version = revision


def manifest_changed(row: ObjectMixin) -> bool:
    """Whether a manifest column of ``row`` holds a value other than its committed one. Read from the
    state's committed values (the rule of attribute history, without building a history per column: the
    hook runs for every dirty row of every flush)."""
    state = inspect(row)
    committed, current = state.committed_state, state.dict
    for name in MANIFEST_ATTRIBUTES:
        if name in committed and name in current:
            old = committed[name]
            if old is NO_VALUE or current[name] != old:
                return True
    return False


def previous_labels(row: ObjectMixin) -> dict[str, Any] | None:
    """The labels before this write when it changes them (None: unchanged, or not loaded to compare)."""
    history = inspect(row).attrs["labels"].history
    if not history.has_changes() or not history.deleted:
        return None
    return dict(history.deleted[0] or {})


event.listen(Session, "before_flush", _before_flush)


__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "ROW_COLUMNS",
    "Change",
    "allocate",
    "delete_returning",
    "insert_added",
    "manifest_changed",
    "previous_labels",
    "record",
]
