"""Writing a batch of loaded, modified API-object rows with a few statements instead of one per row.

The mapper's ``version_id_col`` makes the ORM emit one ``UPDATE ... WHERE id = :id AND resource_version
= :seen`` per row, since it must check each row's count; SQLAlchemy never batches a versioned UPDATE. A
batch writer (scheduler, taint manager, rebalancer) that changed hundreds of rows it loaded in its own
transaction calls ``flush_rows`` instead of leaving them to ``Session.flush``.

Invariants:
- The same rows, values and optimistic check as the ORM's flush: one statement per shape of change
  (which columns, which SQL-expression values: ``bulkrows.update_rows``), each row matched by the
  resourceVersion it was read at; the summed row count must equal the rows written, else
  ``StaleDataError`` (a concurrent writer won: the callers fall back to one transaction per item,
  exactly as after a failed flush).
- The change log is written as ``changelog``'s flush hook would (a revision and an event per row whose
  manifest changed, set into ``resource_version`` by the same UPDATE).
- Afterwards the written attributes are committed state, so the ORM's own flush writes only what these
  rows do not cover (child rows: target clusters, eviction tasks); a row with nothing left pending is
  clean again, so no later flush looks at it.
- Runs under ``no_autoflush``: an autoflush would write the rows one by one before the batch does.
- Rows whose data the ORM's hooks must seal (Secrets) are never given to it. (New Works are inserted as
  column values by ``work_writes``.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import inspect
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import NO_VALUE, set_committed_value
from sqlalchemy.orm.exc import StaleDataError
from sqlalchemy.orm.util import identity_key
from sqlalchemy.sql.elements import ClauseElement

from federation.store import changelog
from federation.store.bulkrows import update_rows
from federation.store.childwrites import CHILD_WRITES, ChildWrites
from federation.store.manifest import view
from federation.store.tables import ObjectMixin

_ID, _SEEN = "b_id", "b_seen"
MANIFEST_KEYS = frozenset(changelog.MANIFEST_ATTRIBUTES)


@contextmanager
def deferred_children(session: Session) -> Iterator[ChildWrites]:
    """While open, ``derive`` collects the child-row changes of rewritten bindings for ``flush_rows``
    instead of editing their ORM collections (``childwrites``)."""
    writes = ChildWrites()
    session.info[CHILD_WRITES] = writes
    try:
        yield writes
    finally:
        session.info.pop(CHILD_WRITES, None)


def flush_rows(session: Session, rows: Sequence[ObjectMixin], children: ChildWrites | None = None) -> int:
    """Write the pending column changes of ``rows`` (loaded in this session), then ``children`` (collected
    under ``deferred_children``); the rows written."""
    with session.no_autoflush:
        changed = [Pending(row, _seen(row), values) for row in rows if (values := _changes(row))]
        if children:
            children.write(session)
            for row in rows:  # their collections in memory no longer say what the database holds
                session.expire(row, _collections(inspect(row).mapper))
        if not changed:
            return 0
        _log(session, changed)
        written = 0
        for (table, plain, expressions), batch in _shapes(changed).items():
            written += _execute(session, table, plain, expressions, batch)
        for pending in changed:
            _commit(session, pending.row, pending.values)
        return written


@dataclass(slots=True)
class Pending:
    row: ObjectMixin
    seen: Any  # the resourceVersion the row was read at
    values: dict[str, Any]  # attribute key -> value to write


def _changes(row: ObjectMixin) -> dict[str, Any]:
    """Attribute key → new value of every changed column attribute (SQL expressions included).

    Read from the state's committed values rather than per-attribute history: the same answer for
    scalar columns at a fraction of the cost (this runs for every row of every batch)."""
    state = inspect(row)
    columns = _column_keys(state.mapper)
    out: dict[str, Any] = {}
    for key, old in state.committed_state.items():
        if key not in columns or key not in state.dict:
            continue
        new = state.dict[key]
        if old is NO_VALUE or isinstance(new, ClauseElement) or new != old:
            out[key] = new
    return out


@lru_cache(maxsize=64)
def _collections(mapper: Any) -> list[str]:
    return [rel.key for rel in mapper.relationships if rel.uselist]


@lru_cache(maxsize=64)
def _column_keys(mapper: Any) -> frozenset[str]:
    return frozenset(attr.key for attr in mapper.column_attrs)


def _seen(row: ObjectMixin) -> Any:
    old = inspect(row).committed_state.get("resource_version", NO_VALUE)
    return row.resource_version if old is NO_VALUE else old


def _log(session: Session, changed: Sequence[Pending]) -> None:
    """The change-log rows and revisions of the rows whose manifest changed (``changelog``'s hook rule):
    the new revision is written by the row's own UPDATE."""
    logged = [p for p in changed if not MANIFEST_KEYS.isdisjoint(p.values)]
    # ``view``, not ``join``: the log serialises each manifest at once and never changes what it shares
    # with the row (``record`` sets the revision in the view's own metadata dict; sealing copies).
    changes = [changelog.Change(changelog.MODIFIED, view(p.row), _previous_labels(p)) for p in logged]
    for pending, revision in zip(logged, changelog.record(session, changes), strict=True):
        pending.row.resource_version = revision
        pending.values["resource_version"] = revision


def _previous_labels(pending: Pending) -> dict[str, Any] | None:
    if "labels" not in pending.values:
        return None
    old = inspect(pending.row).committed_state.get("labels", NO_VALUE)
    return None if old is NO_VALUE else dict(old or {})


def _shapes(
    changed: Sequence[Pending],
) -> dict[tuple[Any, tuple[str, ...], tuple[tuple[str, ClauseElement], ...]], list[dict[str, Any]]]:
    """Rows grouped by what their UPDATE looks like: the plain columns bound per row, and the SQL
    expressions (a queue bump) that are part of the statement itself."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    expression_by_text: dict[str, ClauseElement] = {}
    # Compiling an expression is the costly part; writers share expression objects (``queue_values``), so
    # each distinct object is compiled once (kept alive by ``changed``, so no id is reused meanwhile).
    text_by_id: dict[int, str] = {}
    for pending in changed:
        mapper = inspect(pending.row).mapper
        table = mapper.local_table
        params: dict[str, Any] = {_ID: pending.row.id, _SEEN: pending.seen}
        plain: list[str] = []
        expressions: list[tuple[str, ClauseElement]] = []
        for key, value in pending.values.items():
            column = mapper.column_attrs[key].columns[0].name
            if isinstance(value, ClauseElement):
                text = text_by_id.get(id(value)) or text_by_id.setdefault(
                    id(value), str(value.compile(compile_kwargs={"literal_binds": True}))
                )
                expression_by_text.setdefault(f"{column}:{text}", value)
                expressions.append((column, expression_by_text[f"{column}:{text}"]))
            else:
                plain.append(column)
                params[f"v_{column}"] = value
        key_ = (table, tuple(sorted(plain)), tuple(sorted(expressions, key=lambda e: e[0])))
        groups.setdefault(key_, []).append(params)
    return groups


def _execute(
    session: Session,
    table: Any,
    plain: tuple[str, ...],
    expressions: tuple[tuple[str, ClauseElement], ...],
    batch: list[dict[str, Any]],
) -> int:
    rows = [((params[_ID], params[_SEEN]), {c: params[f"v_{c}"] for c in plain}) for params in batch]
    count = update_rows(session.connection(), table, ("id", "resource_version"), rows, dict(expressions))
    if count != len(batch):
        raise StaleDataError(
            f"UPDATE of {table.name} expected to match {len(batch)} rows; {count} matched "
            "(a concurrent writer changed one of them)"
        )
    return len(batch)


def _commit(session: Session, row: ObjectMixin, values: dict[str, Any]) -> None:
    """Make the written values the rows' committed state; SQL-expression values are expired (the
    database computed them), as the ORM's flush does."""
    expired = []
    for key, value in values.items():
        if isinstance(value, ClauseElement):
            expired.append(key)
        else:
            set_committed_value(row, key, getattr(row, key))
    if expired:
        session.expire(row, expired)
    state = inspect(row)
    if _column_keys(state.mapper).issuperset(state.committed_state):
        # No relationship change is pending, and the column values still in ``committed_state`` are the
        # ones assigned unchanged (``_changes`` wrote every other): nothing of the row is pending. Take it
        # off the session's modified set, as the ORM's own flush does after writing a row
        # (``_commit_all``). Left there, every later autoflush and the commit compare each attribute of
        # every batch row again to find nothing to write (at 1,000 rows, more than the batch's UPDATE).
        state._commit_all(state.dict, session.identity_map)


__all__ = ["deferred_children", "flush_rows"]


def expire_loaded(session: Session, model: type[ObjectMixin], ids: Iterable[int]) -> None:
    """Expire the rows of ``model`` with these ids that this session had loaded: a write that bypassed the
    ORM (``binding_writes``, ``work_writes``, ``status_writes``) changed them, so they no longer say what the
    database holds."""
    for row_id in ids:
        loaded = session.identity_map.get(identity_key(model, row_id))
        if loaded is not None:
            session.expire(loaded)
