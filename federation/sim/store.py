"""The simulator's in-memory object store.

Invariants:
- Objects are keyed by resource type ``(group, plural)`` then ``(namespace, name)``; cluster-scoped objects
  use namespace ``""``.
- ``resourceVersion`` is one global counter: every stored write takes the next value, so versions order all
  writes. Callers hold ``lock`` across read-modify-write sequences (the store itself never calls out).
- Stored dicts are owned by the store: ``get``/``list`` return deep copies, ``put`` stores a deep copy;
  ``peek``/``peek_objects`` hand out the stored dicts themselves, to readers that never change or keep them.
- ``put`` and ``remove`` are the only writes of content: each adds the object's key to every ``track`` set
  of its type and forgets the type's remembered selections (``peek_selected``), so a selection is never
  older than the objects it was made of. ``touch`` is a write of nothing but a new resourceVersion (status
  the simulator computes on read has changed): it changes the stored dict's resourceVersion in place, so
  remembered selections (labels only) and trackers stay as they are.
- Every write, and only a write, takes the next resourceVersion and is recorded in ``changes`` (the watch
  log, ``federation.sim.changes``): ADDED or MODIFIED for ``put``, MODIFIED for ``touch``, DELETED for
  ``remove``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from federation.model.jsonvalue import clone
from federation.sim.changes import ADDED, DELETED, MODIFIED, Change, ChangeLog, ObjKey
from federation.sim.kinds import ResourceType

__all__ = ["ObjKey", "ObjectStore"]


class ObjectStore:
    """A dict of dicts with a global resourceVersion counter, guarded by one re-entrant lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._rv = 0
        self.changes = ChangeLog()
        self._objects: dict[tuple[str, str], dict[ObjKey, dict[str, Any]]] = {}
        self._trackers: dict[tuple[str, str], list[set[ObjKey]]] = {}
        # type → (namespace, selector) → the stored dicts it selects, in order; dropped when the type is
        # written.
        self._selections: dict[tuple[str, str], dict[tuple[str | None, str], list[dict[str, Any]]]] = {}

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    @property
    def rv(self) -> int:
        """The newest resourceVersion, as a number."""
        return self._rv

    def _bucket(self, rtype: ResourceType) -> dict[ObjKey, dict[str, Any]]:
        return self._objects.setdefault(rtype.key, {})

    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            obj = self._bucket(rtype).get((namespace, name))
            return clone(obj) if obj is not None else None

    def peek(self, rtype: ResourceType, key: ObjKey) -> dict[str, Any] | None:
        """``get`` without the copy, for a reader under ``lock`` that neither changes nor keeps it."""
        return self._bucket(rtype).get(key)

    def track(self, rtype: ResourceType) -> set[ObjKey]:
        """A set the store adds the key of every object of ``rtype`` written or removed to, from now on;
        it starts with every key there is. Its owner reads and clears it under ``lock``."""
        with self.lock:
            keys = set(self._bucket(rtype))
            self._trackers.setdefault(rtype.key, []).append(keys)
            return keys

    def _touched(self, rtype: ResourceType, key: ObjKey) -> None:
        self._selections.pop(rtype.key, None)
        for keys in self._trackers.get(rtype.key, ()):
            keys.add(key)

    def list_objects(self, rtype: ResourceType, namespace: str | None = None) -> list[dict[str, Any]]:
        """Objects of ``rtype`` (in ``namespace`` when given), ordered by namespace then name."""
        with self.lock:
            return [clone(o) for o in self.peek_objects(rtype, namespace)]

    def peek_objects(self, rtype: ResourceType, namespace: str | None = None) -> list[dict[str, Any]]:
        """``list_objects`` without the copies, for a reader under ``lock`` that neither changes nor keeps
        what it reads (a LIST page copies only the objects of its page)."""
        with self.lock:
            bucket = self._bucket(rtype).items()
            selected = bucket if namespace is None else [(k, o) for k, o in bucket if k[0] == namespace]
            return [o for _, o in sorted(selected)]

    def peek_selected(
        self,
        rtype: ResourceType,
        namespace: str | None,
        selector: str,
        match: Callable[[dict[str, Any]], bool],
    ) -> list[dict[str, Any]]:
        """``peek_objects`` narrowed to those ``match`` accepts, remembered under ``selector`` (the text
        ``match`` was made from) until the type's next write. A paged LIST asks once per page, and a
        federation's status collection LISTs every few seconds: 10,000 objects were sorted and
        label-matched for each of a LIST's 20 pages, and again each round, when nothing had changed."""
        with self.lock:
            remembered = self._selections.setdefault(rtype.key, {})
            selected = remembered.get((namespace, selector))
            if selected is None:
                selected = remembered[(namespace, selector)] = [
                    o for o in self.peek_objects(rtype, namespace) if match(o)
                ]
            return selected

    def put(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` under the next resourceVersion; returns the stored copy."""
        with self.lock:
            self._rv += 1
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(self._rv)
            key = (meta.get("namespace", "") if rtype.namespaced else "", meta["name"])
            bucket = self._bucket(rtype)
            prev, stored = bucket.get(key), clone(obj)
            bucket[key] = stored
            self._touched(rtype, key)
            event = ADDED if prev is None else MODIFIED
            self.changes.record(Change(self._rv, rtype.key, key, event, stored, prev))
            return clone(obj)

    def touch(self, rtype: ResourceType, key: ObjKey) -> bool:
        """Give the stored object the next resourceVersion and log MODIFIED, its content unchanged: what
        the simulator computes on read (pod readiness, restarts, workload counters) has changed, which a
        real cluster's kubelet or controller would have written. False when there is no such object."""
        with self.lock:
            stored = self._bucket(rtype).get(key)
            if stored is None:
                return False
            self._rv += 1
            stored["metadata"]["resourceVersion"] = str(self._rv)
            self.changes.record(Change(self._rv, rtype.key, key, MODIFIED, stored, stored))
            return True

    def remove(
        self, rtype: ResourceType, namespace: str, name: str, last: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Remove the object; ``last`` is its last state as readers see it (rendered status) for the
        DELETED entry, the stored object when not given. Both get the deletion's resourceVersion."""
        with self.lock:
            removed = self._bucket(rtype).pop((namespace, name), None)
            if removed is not None:
                self._rv += 1
                self._touched(rtype, (namespace, name))
                final = {**(last if last is not None else removed)}
                final["metadata"] = {**final.get("metadata", {}), "resourceVersion": str(self._rv)}
                change = Change(self._rv, rtype.key, (namespace, name), DELETED, final, removed)
                self.changes.record(change)
            return removed

    def namespaces_in_use(self) -> dict[tuple[str, str], list[ObjKey]]:
        """Every bucket's keys, for cascading namespace deletion."""
        with self.lock:
            return {k: list(v) for k, v in self._objects.items()}
