"""The simulator's change log: every write the object store makes, in resourceVersion order, for watches.

Why: a watch used to render the whole collection every 0.1 s and diff snapshots: at 10,000 objects per
member that was a core per open watch. A watch now reads the log past its own position, so an idle watch
costs a comparison and a busy one its own events.

Invariants:
- One entry per write (``put``, ``remove``, ``touch``), taking the write's resourceVersion: within one type
  the entries are in increasing resourceVersion order, and a type's log holds every change of that type
  newer than ``expired_through(type)``.
- Each type keeps at most ``LOG_LIMIT`` entries (read at every write, so tests may lower it); dropping the
  oldest raises ``expired_through``: a reader behind it has lost changes and must start over (410 Expired),
  as a client behind the API server's watch cache does.
- Entries are small: ``obj`` is the stored dict of that version itself (not a copy: the store replaces,
  never changes, a stored dict apart from a ``touch``'s resourceVersion, which the reader takes from the
  entry), so a version costs memory only once a later write has superseded it, until its entry is dropped.
  ``prev`` is the version the write replaced (the same dict for a touch), which selector transitions need.
  A DELETED entry's ``obj`` is the object's last state, rendered by the caller, with the deletion's
  resourceVersion.
- ``follow(type)`` hands out a list the log appends every later change of that type to; its owner reads
  and clears it under the store lock (as ``ObjectStore.track``), so a follower never misses a change even
  when the bounded log drops it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

TypeKey = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace, name)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

# Entries kept per resource type; the API server's watch cache keeps fewer, in a time window.
LOG_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class Change:
    """One write: its resourceVersion, what it wrote, and the versions before and after it."""

    rv: int
    type_key: TypeKey
    key: ObjKey
    event: str
    obj: dict[str, Any]
    prev: dict[str, Any] | None


class ChangeLog:
    """Bounded per-type logs of ``Change`` entries, and the followers of each type."""

    def __init__(self) -> None:
        self._logs: dict[TypeKey, deque[Change]] = {}
        self._expired: dict[TypeKey, int] = {}
        self._followers: dict[TypeKey, list[list[Change]]] = {}

    def record(self, change: Change) -> None:
        log = self._logs.setdefault(change.type_key, deque())
        while len(log) >= max(LOG_LIMIT, 1):
            self._expired[change.type_key] = log.popleft().rv
        log.append(change)
        for changes in self._followers.get(change.type_key, ()):
            changes.append(change)

    def expired_through(self, type_key: TypeKey) -> int:
        """The newest resourceVersion of this type's log already dropped (0 when none was)."""
        return self._expired.get(type_key, 0)

    def since(self, type_key: TypeKey, rv: int) -> list[Change] | None:
        """The changes of the type newer than ``rv``, oldest first; None when some of them were dropped.
        Reads from the newest end, so the cost is the number of changes returned, not the log's length."""
        if rv < self.expired_through(type_key):
            return None
        log = self._logs.get(type_key)
        if not log or log[-1].rv <= rv:
            return []
        newer: list[Change] = []
        for change in reversed(log):
            if change.rv <= rv:
                break
            newer.append(change)
        newer.reverse()
        return newer

    def follow(self, type_key: TypeKey) -> list[Change]:
        """A list every later change of the type is appended to; its owner clears it."""
        changes: list[Change] = []
        self._followers.setdefault(type_key, []).append(changes)
        return changes
