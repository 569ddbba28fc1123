"""Bindings rewritten as column values, without ORM objects (the scheduler's, the rebalancer's and binding
status's batches), and the detector's new bindings inserted so.

Why: a rebalance reschedules a thousand bindings at once, each written twice (the rebalancer's trigger, then
the scheduler's placement). Through the ORM every row was an instrumented object loaded with its target and
eviction-task rows, copied into the row, diffed back out by the flush and recomputed by ``derive`` twice;
that machinery was most of both writers' CPU. Here a binding is read as a Core row (``read``), its new
body is split into column values once, and a batch is a fixed handful of statements (the pattern of
``work_writes`` for Works).

Invariants:
- The same row, target rows and change-log event as the ORM path (``replace_loaded`` and
  ``update_status_loaded``, then ``bulkflush.flush_rows``; ``create`` for ``insert_new``): tests compare
  the two column by column. ``insert_new`` takes only bindings without target or eviction-task rows.
  Generation: +1 when ``spec`` changes; ``content_updated_at`` moves when anything but the status changes;
  a ``spec`` change queues the scheduler (``claims.queue_values``); derived columns from
  ``derive.binding_columns``.
- Target rows equal ``spec.clusters`` (``derive``), so the stored ones are known from the stored spec and
  never read: of a binding whose clusters change, the rows of the entries gone or changed are deleted and
  the new or changed ones inserted, deletes first (the ORM path updates a changed one in place: same values).
- A rewrite that changes ``spec.gracefulEvictionTasks`` is refused (``ValueError``, before anything is
  written): those rows are the ORM path's (``derive._sync_eviction_tasks``).
- Each row's UPDATE checks the resourceVersion it was read at; a row changed (or gone) since raises
  ``Conflict`` and the caller's transaction (or savepoint) must be rolled back: the child rows were written
  first.
- The new body's JSON is stored as it is: ``rewrite`` takes ownership of the manifests it is given.
- Bindings never carry Secret data, so their events are logged as they are (``sealed``).
- Neither function autoflushes; a row this session had loaded as an ORM object is expired after the write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from federation.store import bulkflush, changelog, claims
from federation.store.bulkrows import UpdateRow, insert_columns, update_rows
from federation.store.derive import binding_columns
from federation.store.dialect import among, pairs_among
from federation.store.errors import Conflict
from federation.store.kinds import BINDING_API_VERSION
from federation.store.manifest import generation_content, new_row_values, split, view
from federation.store.tables import BindingTargetClusterRow, ResourceBindingRow, table_of

# What ``rewrite`` reads of a stored binding: its id, version and every column a GET renders.
COLUMNS = changelog.ROW_COLUMNS
# Body columns a rewrite may change, besides ``status``; a change to any of them is a content change.
_CONTENT = ("labels", "annotations", "metadata_extra", "spec", "extra")


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One binding to store: the row as read (``read``'s Core row, or any object with ``COLUMNS`` as
    attributes) and the whole new manifest, status included (its server metadata is ignored)."""

    stored: Any
    manifest: Mapping[str, Any]


def read(session: Session, ids: Iterable[int], also: Sequence[str] = ()) -> dict[int, Any]:
    """The bindings with these row ids, as Core rows of ``COLUMNS`` and the columns named in ``also``
    (attributes by column name), by id: one SELECT."""
    t = table_of(ResourceBindingRow)
    return {row.id: row for row in read_where(session, among(session, t.c.id, sorted(ids)), also)}


def read_where(session: Session, condition: ColumnElement[bool], also: Sequence[str] = ()) -> list[Any]:
    """The bindings matching ``condition``, as Core rows of ``COLUMNS`` (and ``also``): one SELECT."""
    t = table_of(ResourceBindingRow)
    return list(session.execute(select(*(t.c[name] for name in (*COLUMNS, *also))).where(condition)))


def insertable(binding: Mapping[str, Any]) -> bool:
    """Whether ``insert_new`` takes this binding: one without ``spec.clusters`` and eviction tasks (the
    detector's new bindings), whose child rows would be the ORM path's to write."""
    spec = binding.get("spec")
    if not isinstance(spec, Mapping):
        return True
    return not spec.get("clusters") and not spec.get("gracefulEvictionTasks")


def insert_new(session: Session, bindings: Sequence[Mapping[str, Any]], now: datetime) -> int:
    """Insert new bindings (each ``insertable``) by one statement, with their ADDED events and revisions,
    each queued for the scheduler as a create queues it; the bindings inserted. A duplicate name fails the
    statement (``IntegrityError``). Takes ownership of the manifests' JSON."""
    if not bindings:
        return 0
    rows = [_new_row(binding, now) for binding in bindings]
    return len(changelog.insert_added(session, ResourceBindingRow, rows))


def _new_row(binding: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The column values ``ObjectRepository.create`` gives a new binding (``derive`` included)."""
    parts = split(binding, copy=False)
    kind = "ResourceBinding" if parts.namespace else "ClusterResourceBinding"
    if parts.kind and parts.kind != kind:
        raise ValueError(f"kind: expected {kind}, got {parts.kind!r}")
    if not parts.name:
        raise ValueError(f"{kind} without metadata.name")
    if not insertable(binding):
        raise ValueError(f"{kind} {parts.namespace}/{parts.name} has target or eviction rows to write")
    return {
        **new_row_values(parts, kind, BINDING_API_VERSION, now),
        "content_updated_at": now,
        **binding_columns(parts.spec, parts.status, parts.labels),
        **claims.created_values(ResourceBindingRow),  # ``derive.mark_dirty(created=True)``: to be scheduled
    }


def next_generation(stored: Any, manifest: Mapping[str, Any]) -> int:
    """The generation the binding has once ``manifest`` is stored: one more when its spec changes."""
    bumped = generation_content(stored.spec, stored.extra or {}) != generation_content(
        manifest.get("spec"), {k: v for k, v in manifest.items() if k not in _TOP_LEVEL}
    )
    return int(stored.generation) + int(bumped)


_TOP_LEVEL = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})


@dataclass(slots=True)
class _Planned:
    rewrite: Rewrite
    columns: dict[str, Any]  # the row's columns after the write (what the event renders)
    values: dict[str, Any]  # the changed ones, to write
    queued: bool = False  # spec changed: the scheduler is queued
    targets: dict[str, int] | None = None  # the new target rows, when ``spec.clusters`` changed
    old_targets: dict[str, int] = field(default_factory=dict)  # the stored ones then


def rewrite(session: Session, rewrites: Sequence[Rewrite], now: datetime) -> list[dict[str, Any]]:
    """Store each binding's new body, derived columns and target rows, each at its own new revision with
    its MODIFIED event; the bindings as stored (views), in order. A rewrite that changes nothing writes
    nothing and answers the stored binding. ``Conflict`` if a row moved since it was read."""
    with session.no_autoflush:
        planned = [_plan(r, now) for r in rewrites]
        changed = [p for p in planned if p.values]
        if changed:
            _write_targets(session, changed)
            _log(session, changed)
            _update(session, changed)
            bulkflush.expire_loaded(session, ResourceBindingRow, (p.rewrite.stored.id for p in changed))
        return [view(SimpleNamespace(**p.columns)) for p in planned]  # type: ignore[arg-type]


def _plan(given: Rewrite, now: datetime) -> _Planned:
    stored = given.stored
    parts = split(given.manifest, copy=False)
    new = {
        "labels": parts.labels,
        "annotations": parts.annotations,
        "metadata_extra": parts.metadata_extra,
        "spec": parts.spec,
        "extra": parts.extra,
    }
    values = {k: v for k, v in new.items() if getattr(stored, k) != v}
    if parts.api_version and parts.api_version != stored.api_version:
        values["api_version"] = parts.api_version
    old_tasks = (stored.spec or {}).get("gracefulEvictionTasks")
    if "spec" in values and old_tasks != (parts.spec or {}).get("gracefulEvictionTasks"):
        raise ValueError(
            f"spec.gracefulEvictionTasks of {stored.namespace}/{stored.name} changes: not a column rewrite"
        )
    content = bool(values)
    if stored.status != parts.status:
        values["status"] = parts.status
    columns = {name: getattr(stored, name) for name in COLUMNS}
    if not values:
        return _Planned(given, columns, {})
    values["generation"] = next_generation(stored, given.manifest)
    values["updated_at"] = now
    if content:
        values["content_updated_at"] = now
    values.update(binding_columns(parts.spec, parts.status, parts.labels))
    columns.update(values)
    planned = _Planned(given, columns, values, queued="spec" in values)
    old_clusters, new_clusters = _raw_clusters(stored.spec), _raw_clusters(parts.spec)
    if planned.queued and old_clusters != new_clusters:  # the lists first: a trigger shares its clusters
        old, new_targets = _clusters(old_clusters), _clusters(new_clusters)
        if old != new_targets:
            planned.targets, planned.old_targets = new_targets, old
    return planned


def _write_targets(session: Session, changed: Sequence[_Planned]) -> None:
    """The target rows of the bindings whose ``spec.clusters`` changed, entry by entry: a cluster gone or
    whose replicas changed has its row deleted, then one new or changed is inserted (a reschedule moves a
    few of a binding's clusters, so most rows stay as they are)."""
    gone: list[tuple[int, str]] = []
    columns: dict[str, list[Any]] = {"binding_id": [], "cluster_name": [], "replicas": []}
    for p in changed:
        if p.targets is None:
            continue
        binding_id, old, new = p.rewrite.stored.id, p.old_targets, p.targets
        gone += [(binding_id, name) for name, replicas in old.items() if new.get(name) != replicas]
        for name, replicas in new.items():
            if old.get(name) != replicas:
                columns["binding_id"].append(binding_id)
                columns["cluster_name"].append(name)
                columns["replicas"].append(replicas)
    targets = table_of(BindingTargetClusterRow)
    connection = session.connection()
    if gone:
        ids = sorted({binding_id for binding_id, _ in gone})
        pairs = pairs_among(connection, (targets.c.binding_id, targets.c.cluster_name), gone)
        # The ids first: the planner finds the rows by the (binding_id, cluster_name) index.
        connection.execute(targets.delete().where(among(connection, targets.c.binding_id, ids), pairs))
    if columns["binding_id"]:
        insert_columns(connection, targets, columns)


def _raw_clusters(spec: Any) -> Any:
    return spec.get("clusters") if isinstance(spec, Mapping) else None


def _clusters(clusters: Any) -> dict[str, int]:
    """``spec.clusters`` as target rows hold it (``derive._sync_targets``)."""
    return {str(c["name"]): int(c.get("replicas") or 0) for c in clusters or [] if isinstance(c, Mapping)}


def _log(session: Session, changed: Sequence[_Planned]) -> None:
    """A MODIFIED event per binding at its new revision (``changelog``'s rule for a changed manifest)."""
    changes = [
        changelog.Change(
            changelog.MODIFIED,
            view(SimpleNamespace(**p.columns)),  # type: ignore[arg-type]
            _previous_labels(p),
            sealed=True,
        )
        for p in changed
    ]
    for planned, revision in zip(changed, changelog.record(session, changes), strict=True):
        planned.values["resource_version"] = revision
        planned.columns["resource_version"] = revision


def _previous_labels(planned: _Planned) -> dict[str, Any] | None:
    return dict(planned.rewrite.stored.labels or {}) if "labels" in planned.values else None


def _update(session: Session, changed: Sequence[_Planned]) -> None:
    """One UPDATE per shape (the columns written, queued or not), each row matched by its id and the
    resourceVersion it was read at."""
    shapes: dict[tuple[tuple[str, ...], bool], list[UpdateRow]] = {}
    for p in changed:
        match = (p.rewrite.stored.id, p.rewrite.stored.resource_version)
        shapes.setdefault((tuple(sorted(p.values)), p.queued), []).append((match, p.values))
    table = table_of(ResourceBindingRow)
    connection = session.connection()
    for (_, queued), rows in shapes.items():
        shared = claims.queue_values(ResourceBindingRow) if queued else None
        matched = update_rows(connection, table, ("id", "resource_version"), rows, shared)
        if matched != len(rows):
            stored = changed[0].rewrite.stored  # which row moved is not told: the batch is retried as a whole
            raise Conflict(
                stored.kind, stored.namespace, stored.name, "a binding changed while it was rewritten"
            )


__all__ = [
    "COLUMNS",
    "Rewrite",
    "insert_new",
    "insertable",
    "next_generation",
    "read",
    "read_where",
    "rewrite",
]
