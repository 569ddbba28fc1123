"""Watch (``?watch=true``): a stream of ``{"type", "object"}`` lines that follows the store's change log
(``federation.sim.changes``), with the API server's semantics.

Invariants:
- Without a ``resourceVersion`` (or with ``"0"``) the stream starts with ADDED for every matching object,
  then follows changes from the resourceVersion it rendered them at. With one, it sends exactly the changes
  newer than it, in order, each once: a LIST's ``metadata.resourceVersion`` followed by a WATCH from it
  misses nothing and repeats nothing.
- Every event's object carries the resourceVersion of its change; status is rendered when the event is
  read (the simulator computes it), and every change of that status is itself a change in the log
  (``status_writes``), settled at each poll (``SimCluster.request``) by the injected clock.
- Selector transitions are the API server's: a change that makes an object stop matching is DELETED, one
  that makes it start matching is ADDED, judged on the versions before and after the change.
- A position older than what the log keeps gets one ``ERROR`` event (410 Expired) and the stream ends; the
  client re-lists.
- A poll with nothing new is O(1): no snapshot, no rendering. An event renders only its own object.
- With ``allowWatchBookmarks``, a BOOKMARK with the current resourceVersion follows every
  ``BOOKMARK_QUIET_SECONDS`` without an event, and one comes just before the stream ends at its timeout.
- The stream ends after ``timeoutSeconds`` (default 300 s), and earlier when the server shuts down.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from federation import jsoncodec
from federation.sim import errors
from federation.sim.changes import ADDED, DELETED, MODIFIED, Change
from federation.sim.cluster import SimCluster
from federation.sim.kinds import ResourceType
from federation.sim.selectors import Predicate

POLL_SECONDS = 0.1
BOOKMARK_QUIET_SECONDS = 5.0
Event = tuple[str, dict[str, Any]]


@dataclass(slots=True)
class Cursor:
    """One stream's position: what it watches, and the resourceVersion it has sent everything up to."""

    rtype: ResourceType
    namespace: str | None
    labels: Predicate | None  # None: no label selector
    fields: Predicate | None  # None: no field selector
    rv: int

    @property
    def selective(self) -> bool:
        return self.labels is not None or self.fields is not None

    def matches(self, obj: dict[str, Any]) -> bool:
        return (self.labels is None or self.labels(obj)) and (self.fields is None or self.fields(obj))


def parse_resource_version(text: str | None) -> int | None:
    """The position to watch from; None for none (or ``"0"``): start with the current objects."""
    if text in (None, "", "0"):
        return None
    assert text is not None
    if not text.isdigit():
        raise errors.bad_request(
            f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing "{text}": invalid syntax'
        )
    return int(text)


def transition(event: str, before: bool, now: bool) -> str | None:
    """The event a selecting watcher gets for a change, from whether the object matched before and after
    it (the API server's rule); None when it gets none."""
    if event == ADDED:
        return ADDED if now else None
    if event == DELETED:
        return DELETED if before else None
    if before:
        return MODIFIED if now else DELETED
    return ADDED if now else None


def start(cluster: SimCluster, cursor: Cursor, resource_version: int | None) -> list[Event]:
    """Position the cursor; without a resourceVersion, ADDED for every matching object, rendered."""
    if resource_version is not None:
        cursor.rv = resource_version
        return []
    with cluster.request():
        scope, match = cursor.namespace, cursor.matches
        current = cluster.list_objects(cursor.rtype, scope, match)
        cursor.rv = cluster.store.rv
    return [(ADDED, obj) for obj in current]


def read(cluster: SimCluster, cursor: Cursor) -> list[Event] | None:
    """The events past the cursor, which moves to the current resourceVersion; None when the log no
    longer holds them all (410)."""
    with cluster.request():  # settles status due by now first
        changes = cluster.store.changes.since(cursor.rtype.key, cursor.rv)
        if changes is None:
            return None
        events = [event for change in changes if (event := _event(cluster, cursor, change)) is not None]
        cursor.rv = max(cursor.rv, cluster.store.rv)
        return events


def _event(cluster: SimCluster, cursor: Cursor, change: Change) -> Event | None:
    if cursor.namespace is not None and change.key[0] != cursor.namespace:
        return None
    if change.event == DELETED:  # its object is the last state, rendered, with the deletion's version
        kind = transition(DELETED, cursor.matches(change.obj), False)
        return None if kind is None else (kind, change.obj)
    obj = cluster.render(cursor.rtype, change.obj)
    obj["metadata"]["resourceVersion"] = str(change.rv)  # a touched dict carries a newer one in place
    now = cursor.matches(obj)
    kind = transition(change.event, _matched_before(cluster, cursor, change, now), now)
    return None if kind is None else (kind, obj)


def _matched_before(cluster: SimCluster, cursor: Cursor, change: Change, now: bool) -> bool:
    if change.prev is None:
        return False
    if not cursor.selective or change.prev is change.obj:  # a touch changes no labels or fields we keep
        return now
    prev = change.prev if cursor.fields is None else cluster.render(cursor.rtype, change.prev)
    return cursor.matches(prev)


def expired(cluster: SimCluster, cursor: Cursor) -> dict[str, Any]:
    oldest = cluster.store.changes.expired_through(cursor.rtype.key) + 1
    message = f"too old resource version: {cursor.rv} ({oldest})"
    return errors.status_body(410, "Expired", message)


def bookmark(cursor: Cursor) -> dict[str, Any]:
    meta = {"resourceVersion": str(cursor.rv)}
    return {"kind": cursor.rtype.kind, "apiVersion": cursor.rtype.group_version, "metadata": meta}


def _line(kind: str, obj: dict[str, Any]) -> bytes:
    return jsoncodec.dumps_bytes({"type": kind, "object": obj}) + b"\n"


async def watch_stream(
    cluster: SimCluster,
    cursor: Cursor,
    initial: list[Event],
    timeout_seconds: float,
    shape: Callable[[dict[str, Any]], dict[str, Any]] = lambda obj: obj,
    bookmarks: Callable[[Cursor], dict[str, Any]] | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> AsyncIterator[bytes]:
    """The stream: ``initial`` events, then what ``read`` finds every ``POLL_SECONDS``. ``shape`` turns
    each object into what the client asked for (a Table row, say); ``bookmarks`` makes a BOOKMARK's
    object (``bookmark``, or an empty Table), and None sends none."""
    deadline = time.monotonic() + timeout_seconds
    for kind, obj in initial:
        yield _line(kind, shape(obj))
    quiet_since = time.monotonic()
    while True:
        events = read(cluster, cursor)
        if events is None:
            yield _line("ERROR", expired(cluster, cursor))
            return
        for kind, obj in events:
            yield _line(kind, shape(obj))
        now = time.monotonic()
        if events:
            quiet_since = now
        elif bookmarks is not None and now - quiet_since >= BOOKMARK_QUIET_SECONDS:
            yield _line("BOOKMARK", bookmarks(cursor))
            quiet_since = now
        if now >= deadline or stopping():
            break
        await asyncio.sleep(min(POLL_SECONDS, deadline - now))
    if bookmarks is not None and not stopping():
        yield _line("BOOKMARK", bookmarks(cursor))
