"""Reading the change log: polling it in revision order, telling a gap that may still fill from one that
never will, history for a watch that starts in the past, pruning.

Revisions are drawn when a writer flushes but become visible when it commits, so a reader can see
revision 11 before revision 10 (on Postgres; SQLite runs one writer at a time and commits in revision
order). A watch that passed 11 would never deliver 10. ``Resolver`` therefore hands out a revision only
when every lower one is final: present, or known never to commit.

Why a gap is final (Postgres): a writer takes a transaction id and a lock on ``change_log`` before it
draws a revision (``changelog.allocate``) and holds both until it ends. A gap below a revision visible in
snapshot S was drawn before S, so its writer had ended by S (committed: visible; rolled back: gone for
good) or is among the lock holders listed after S (or ended in between). When none of those is running
in a later snapshot S', what S' shows below the revisions S showed is final. Only our database's writers
count (the lock is on our table), so a long transaction elsewhere on the server holds nothing up. A poll
reads the running transaction ids, then its rows, then (on a gap) the lock holders, each statement later
than the one before: ids found ended by the first have ended for the rows too.

Invariants:
- ``Resolver.resolved`` only grows, and every revision up to it is final.
- The log is pruned by age as a prefix of revisions (never a row above a kept one), the newest row never:
  a watch from ``N >= oldest_watchable()`` misses nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, delete, exists, func, select, text
from sqlalchemy.orm import Session

from federation.store.dialect import is_postgres
from federation.store.sealing import SECRET_BOX, unseal_manifest
from federation.store.tables import ChangeLogRow, RevisionCounterRow, table_of
from federation.store.tables.changelog import RESOURCE_VERSION_SEQUENCE

_RUNNING = text("SELECT x::xid::text FROM pg_snapshot_xip(pg_current_snapshot()) AS x")
# Transactions with an id that hold a lock on change_log: the writers that drew a revision and have not
# ended (pg_locks lists fast-path locks too, and every transaction with an id locks that id).
_WRITERS = text(
    "SELECT DISTINCT t.transactionid::text FROM pg_locks AS r JOIN pg_locks AS t "
    "ON t.virtualtransaction = r.virtualtransaction AND t.locktype = 'transactionid' "
    "WHERE r.locktype = 'relation' AND r.relation = CAST(:table AS regclass)"
)
_SEQUENCE_START = text("SELECT start_value FROM pg_sequences WHERE sequencename = :name")


@dataclass(frozen=True, slots=True)
class ChangeEntry:
    """One logged event; ``object`` is what a GET at ``revision`` returned (Secret data in the clear)."""

    revision: int
    event: str
    api_version: str
    kind: str
    namespace: str
    name: str
    object: dict[str, Any]
    previous_labels: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Poll:
    """Log rows after a revision; on Postgres the transaction ids running in the snapshot that read them
    (``running``, None on SQLite) and, when the rows have a gap, the writers that may still fill it."""

    entries: tuple[ChangeEntry, ...]
    running: frozenset[int] | None = None
    writers: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class Scope:
    """Which objects a watch follows: one kind (by group, or by exact apiVersion for resource templates),
    optionally one namespace and one name."""

    api_version: str
    kind: str
    match_api_version: bool
    namespace: str | None = None
    name: str | None = None

    def matches(self, entry: ChangeEntry) -> bool:
        """``conditions`` in Python, for events read for every scope at once."""
        if entry.kind != self.kind or not self._same_api(entry.api_version):
            return False
        if self.namespace is not None and entry.namespace != self.namespace:
            return False
        return self.name is None or entry.name == self.name

    def _same_api(self, api_version: str) -> bool:
        if self.match_api_version:
            return api_version == self.api_version
        return api_version.rpartition("/")[0] == self._group

    @property
    def _group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def conditions(self) -> list[ColumnElement[bool]]:
        t = table_of(ChangeLogRow)
        found = [t.c.kind == self.kind]
        if self.match_api_version:
            found.append(t.c.api_version == self.api_version)
        else:  # Karmada's kinds: every version of the group is a view of the same objects
            group = self._group
            found.append(t.c.api_version.startswith(f"{group}/") if group else ~t.c.api_version.contains("/"))
        if self.namespace is not None:
            found.append(t.c.namespace == self.namespace)
        if self.name is not None:
            found.append(t.c.name == self.name)
        return found


def poll(session: Session, after: int, limit: int, *, with_objects: bool = True) -> Poll:
    """Up to ``limit`` rows after revision ``after``, in order (without ``with_objects``: revisions only)."""
    t = table_of(ChangeLogRow)
    running = None
    if is_postgres(session):
        running = _ids(session.scalars(_RUNNING))
    columns = list(t.columns) if with_objects else [t.c.revision]
    statement = select(*columns).where(t.c.revision > after).order_by(t.c.revision).limit(limit)
    rows = session.execute(statement)
    if with_objects:
        entries = tuple(_entry(session, row) for row in rows)
    else:
        entries = tuple(ChangeEntry(int(row.revision), "", "", "", "", "", {}) for row in rows)
    writers: frozenset[int] = frozenset()
    if running is not None and _has_gap(after, entries):
        writers = _ids(session.scalars(_WRITERS, {"table": t.name}))
    return Poll(entries, running, writers)


def _ids(values: Any) -> frozenset[int]:
    return frozenset(int(value) for value in values)


def _has_gap(after: int, entries: tuple[ChangeEntry, ...]) -> bool:
    revisions = [after, *(entry.revision for entry in entries)]
    return any(b != a + 1 for a, b in itertools.pairwise(revisions))


def history(session: Session, after: int, upto: int, scope: Scope, limit: int) -> list[ChangeEntry]:
    """The events of ``scope`` in revisions ``(after, upto]``, in order, at most ``limit``."""
    t = table_of(ChangeLogRow)
    statement = (
        select(t)
        .where(t.c.revision > after, t.c.revision <= upto, *scope.conditions())
        .order_by(t.c.revision)
        .limit(limit)
    )
    return [_entry(session, row) for row in session.execute(statement)]


def _entry(session: Session, row: Row[Any]) -> ChangeEntry:
    return ChangeEntry(
        revision=int(row.revision),
        event=row.event,
        api_version=row.api_version,
        kind=row.kind,
        namespace=row.namespace,
        name=row.name,
        object=unseal_manifest(row.object, session.info.get(SECRET_BOX)),
        previous_labels=row.previous_labels,
    )


def start_position(session: Session) -> int:
    """A revision up to which the log is complete now: where a reader that knows nothing yet starts."""
    t = table_of(ChangeLogRow)
    if session.scalar(select(func.min(t.c.revision))) is None:
        return _before_first_write(session)
    following = t.alias("following")
    last_before_gap = select(func.min(t.c.revision)).where(
        ~exists().where(following.c.revision == t.c.revision + 1)
    )
    return int(session.scalar(last_before_gap) or 0)


def oldest_watchable(session: Session) -> int:
    """The oldest revision a watch may start from: every later event is still in the log."""
    first = session.scalar(select(func.min(table_of(ChangeLogRow).c.revision)))
    return _before_first_write(session) if first is None else int(first) - 1


def _before_first_write(session: Session) -> int:
    """An empty log: the revision the sequence started after (what the migration found in the tables)."""
    if is_postgres(session):
        start = session.scalar(_SEQUENCE_START, {"name": RESOURCE_VERSION_SEQUENCE.name})
        return int(start or 1) - 1
    return int(session.scalar(select(table_of(RevisionCounterRow).c.value)) or 0)


def prune(session: Session, before: datetime, limit: int) -> int:
    """Delete up to ``limit`` of the oldest rows logged before ``before`` (a prefix, never the newest row);
    how many went. Callers loop in separate transactions until it returns less than ``limit``."""
    t = table_of(ChangeLogRow)
    cutoff = session.scalar(select(func.max(t.c.revision)).where(t.c.created_at < before))
    if cutoff is None:
        return 0
    newest = select(func.max(t.c.revision)).scalar_subquery()
    doomed = (
        select(t.c.revision)
        .where(t.c.revision <= cutoff, t.c.revision < newest)
        .order_by(t.c.revision)
        .limit(limit)
    )
    result = session.execute(delete(t).where(t.c.revision.in_(doomed.scalar_subquery())))
    return int(result.rowcount)  # type: ignore[attr-defined]


@dataclass
class Resolver:
    """Turns successive polls into the events that are final, in revision order (see the module doc)."""

    resolved: int
    # A gap seen below ``_horizon`` waits until none of ``_writers`` (the writers then) is running.
    _horizon: int | None = None
    _writers: frozenset[int] = frozenset()

    def advance(self, polled: Poll) -> list[ChangeEntry]:
        final: list[ChangeEntry] = []
        for entry in polled.entries:
            if entry.revision != self.resolved + 1 and not self._settled(entry.revision, polled):
                self._wait(polled)
                break
            final.append(entry)
            self.resolved = entry.revision
        if self._horizon is not None and self.resolved >= self._horizon:
            self._horizon = None
        return final

    def _settled(self, revision: int, polled: Poll) -> bool:
        """Is the gap below ``revision`` final?"""
        if polled.running is None:  # SQLite: the writer of a lower revision committed (or not) before
            return True
        below = self._horizon is not None and revision <= self._horizon
        return below and not (self._writers & polled.running)

    def _wait(self, polled: Poll) -> None:
        pending = self._horizon is not None and bool(self._writers & (polled.running or frozenset()))
        if not pending:  # none yet, or the last one settled and this gap lies above it
            self._horizon = polled.entries[-1].revision
            self._writers = polled.writers
