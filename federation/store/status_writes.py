"""Status-only writes of objects read as Core rows, without ORM objects (binding status's template writes,
work status's Work writes).

Why: binding status writes a template's status (a Deployment's replicas summed over its members) for most
of the bindings it aggregates, several times per workload while it rolls out, and work status a Work's
manifest statuses as its members report them. Through the ORM each object was loaded as an instrumented
object, its status copied into it, its derived columns recomputed from its whole body (a Work's manifest
hash) and diffed back out by the flush; here an object is one Core row (``read_by_uids``, ``read_by_ids``)
and a batch of status writes is a change-log insert and one UPDATE (the pattern of ``binding_writes`` for
bindings).

Invariants:
- The same row and change-log event as ``ObjectRepository.update_status_loaded`` then
  ``bulkflush.flush_rows``: ``status``, ``updated_at``, ``resource_version`` and the columns derived from
  the status (``derived``: a Work's ``applied``; a template derives none) change, nothing else; tests
  compare the two paths column by column. A caller whose rows derive more from a status write than
  ``derived`` gives (a Work without its binding's id) leaves them to the ORM.
- Each row's UPDATE checks the resourceVersion it was read at; a row changed (or gone) since raises
  ``Conflict`` and the caller's transaction (or savepoint) must be rolled back.
- The event is built from the stored columns, so it is logged as stored (``sealed``: a Secret's data is
  already sealed there).
- A status equal to the stored one writes nothing. ``write`` takes ownership of the statuses it is given.
- Neither function autoflushes; a row this session had loaded as an ORM object is expired after the write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from federation.store import bulkflush, changelog
from federation.store.bulkrows import UpdateRow, update_rows
from federation.store.derive import work_status_columns
from federation.store.dialect import among
from federation.store.errors import Conflict
from federation.store.kinds import WORK_API_VERSION
from federation.store.manifest import view
from federation.store.repository import ObjectRepository
from federation.store.tables import ObjectMixin, WorkRow, table_of

# What ``read_by_uids`` reads: the id, the version and every column a GET renders.
COLUMNS = changelog.ROW_COLUMNS


@dataclass(frozen=True, slots=True)
class StatusWrite:
    """One object's new status; ``stored`` is its Core row as read (or any object with ``COLUMNS``)."""

    stored: Any
    status: Any


def read_by_uids(session: Session, model: type[ObjectMixin], uids: Sequence[str]) -> dict[str, Any]:
    """uid → Core row of ``COLUMNS`` of the objects of ``model``'s table with these uids (absent ones are
    missing): one SELECT."""
    return {row.uid: row for row in _read(session, model, "uid", uids, ())}


def read_by_ids(
    session: Session, model: type[ObjectMixin], ids: Sequence[int], also: Sequence[str] = ()
) -> dict[int, Any]:
    """id → Core row of ``COLUMNS`` and ``also`` of the objects of ``model``'s table with these row ids
    (absent ones are missing): one SELECT."""
    return {row.id: row for row in _read(session, model, "id", ids, also)}


def _read(
    session: Session, model: type[ObjectMixin], key: str, keys: Sequence[Any], also: Sequence[str]
) -> list[Any]:
    if not keys:
        return []
    t = table_of(model)
    names = (*COLUMNS, *also)
    return list(
        session.execute(select(*(t.c[n] for n in names)).where(among(session, t.c[key], sorted(set(keys)))))
    )


def write(
    session: Session,
    model: type[ObjectMixin],
    writes: Sequence[StatusWrite],
    now: datetime,
    derived: Callable[[Any], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Store each object's new status at its own new revision with its MODIFIED event; the objects as
    stored (views), in order. ``derived``: the columns a status gives the row (the same keys for every
    status). ``Conflict`` if a row moved since it was read."""
    with session.no_autoflush:
        changed = [w for w in writes if w.status != w.stored.status]
        columns = [_columns(w, now) for w in changed]
        derived_values = [derived(w.status) if derived else {} for w in changed]
        if changed:
            changes = [
                changelog.Change(changelog.MODIFIED, view(SimpleNamespace(**c)), sealed=True)  # type: ignore[arg-type]
                for c in columns
            ]
            for c, revision in zip(columns, changelog.record(session, changes), strict=True):
                c["resource_version"] = revision
            _update(session, model, changed, columns, derived_values)
            bulkflush.expire_loaded(session, model, (w.stored.id for w in changed))
        after = {id(w): c for w, c in zip(changed, columns, strict=True)}
        return [
            view(SimpleNamespace(**after.get(id(w), {n: getattr(w.stored, n) for n in COLUMNS})))  # type: ignore[arg-type]
            for w in writes
        ]


def _columns(given: StatusWrite, now: datetime) -> dict[str, Any]:
    columns = {name: getattr(given.stored, name) for name in COLUMNS}
    columns.update(status=given.status, updated_at=now)
    return columns


def _update(
    session: Session,
    model: type[ObjectMixin],
    changed: Sequence[StatusWrite],
    columns: Sequence[dict[str, Any]],
    derived: Sequence[dict[str, Any]],
) -> None:
    rows: list[UpdateRow] = [
        (
            (w.stored.id, w.stored.resource_version),
            {
                "status": c["status"],
                "updated_at": c["updated_at"],
                "resource_version": c["resource_version"],
                **d,
            },
        )
        for w, c, d in zip(changed, columns, derived, strict=True)
    ]
    matched = update_rows(session.connection(), table_of(model), ("id", "resource_version"), rows)
    if matched != len(rows):
        stored = changed[0].stored  # which row moved is not told: the batch is retried as a whole
        raise Conflict(
            stored.kind, stored.namespace, stored.name, "an object changed while its status was written"
        )


# -- Works: work sync's and work status's writes -------------------------------------------------------


def read_works(session: Session, ids: Sequence[int]) -> dict[int, Any]:
    """id → the Works as ``write_works`` takes them (Core rows of ``COLUMNS`` and ``binding_id``)."""
    return read_by_ids(session, WorkRow, ids, also=("binding_id",))


def write_works(
    session: Session, rows: Mapping[int, Any], statuses: Mapping[int, Any], now: datetime
) -> list[tuple[int, datetime, int]]:
    """Each Work's new status (row id → status, of ``rows`` as ``read_works`` read them), ``applied``
    derived; (id, updated_at, resourceVersion) of each Work written. A Work without its binding's id goes
    through the ORM, whose ``derive`` may find it. ``Conflict`` if a Work moved since it was read."""
    by_columns = [StatusWrite(rows[i], s) for i, s in statuses.items() if rows[i].binding_id is not None]
    stored = write(session, WorkRow, by_columns, now, work_status_columns)
    stamps = [
        (w.stored.id, now, int(v["metadata"]["resourceVersion"]))
        for w, v in zip(by_columns, stored, strict=True)
        if w.status != w.stored.status
    ]
    by_orm = {i: s for i, s in statuses.items() if rows[i].binding_id is None}
    return stamps + _write_works_by_orm(session, by_orm, now)


def _write_works_by_orm(
    session: Session, statuses: Mapping[int, Any], now: datetime
) -> list[tuple[int, datetime, int]]:
    if not statuses:
        return []
    objects = ObjectRepository(session, "Work", WORK_API_VERSION, clock=lambda: now)
    loaded = session.scalars(select(WorkRow).where(among(session, WorkRow.id, sorted(statuses))))
    written = [row for row in loaded if objects.update_status_loaded(row, statuses[row.id], flush=False)]
    try:
        session.flush()
    except StaleDataError as exc:
        raise Conflict("Work", "", "", "a Work changed while its status was written") from exc
    return [(row.id, row.updated_at, row.resource_version) for row in written]


__all__ = ["COLUMNS", "StatusWrite", "read_by_ids", "read_by_uids", "read_works", "write", "write_works"]
