"""What the simulated scheduler needs of every pod, kept up to date from the pods written since it last
looked (``ObjectStore.track``) instead of recomputed from every pod on every write.

Invariants:
- ``used`` is, per node name, the summed requests of the live (not terminated) pods bound to it, and
  ``waiting`` the keys of the live pods bound to none: exactly what a scan of every pod would give, after
  ``refresh``. A write of one pod costs the ledger that pod, whatever the number of pods: at 10,000 pods a
  scan per write made every write to the simulator ~35 ms.
- ``to_try`` answers every waiting pod when room may have grown since the last attempt at all of them (a
  bound pod removed, terminated or rewritten, a node written or removed), else only the waiting pods written
  since the last attempt: the others did not fit then, and nothing has freed room for them since (room only
  shrank as pods were bound), so trying them again binds nothing. kube-scheduler likewise parks an
  unschedulable pod until a cluster event may make it schedulable. With ~1,200 pods pending (a member short
  of room) trying every one on every write made each apply 14 ms; 0.75 ms since.
- Used only under the store lock (the runtime is), so no write is seen half way.
"""

from __future__ import annotations

from typing import Any

from federation.sim.kinds import ResourceType
from federation.sim.pods import Amounts, is_terminated, node_allocatable, node_name, pod_requests
from federation.sim.store import ObjectStore, ObjKey


class CapacityLedger:
    def __init__(self, store: ObjectStore, pods: ResourceType, nodes: ResourceType) -> None:
        self.store = store
        self.pods = pods
        self.node_type = nodes
        self._changed = store.track(pods)
        self._nodes_changed = store.track(nodes)
        self._bound: dict[ObjKey, tuple[str, Amounts]] = {}  # live bound pod → its node and requests
        self.used: dict[str, Amounts] = {}
        self.waiting: set[ObjKey] = set()
        self._fresh: set[ObjKey] = set()  # waiting pods written since the last attempt
        self._room_grew = True  # since the last attempt at every waiting pod
        self._allocatable: dict[str, Amounts] = {}  # node name → its parsed allocatable
        self._nodes: list[dict[str, Any]] | None = None  # the stored nodes in key order

    def refresh(self) -> None:
        """Account for every pod written or removed since the last refresh."""
        for key in self._changed:
            self._forget(key)
            pod = self.store.peek(self.pods, key)
            if pod is None or is_terminated(pod):
                continue
            host = node_name(pod)
            if not host:
                self.waiting.add(key)
                self._fresh.add(key)
                continue
            requests = pod_requests(pod)
            self._bound[key] = (host, requests)
            used = self.used.setdefault(host, {})
            for name, amount in requests.items():
                used[name] = used.get(name, 0) + amount
        self._changed.clear()
        if self._nodes_changed:
            self._room_grew = True
            self._allocatable.clear()
            self._nodes = None
            self._nodes_changed.clear()

    def to_try(self) -> set[ObjKey]:
        """The waiting pods a scheduling attempt should try (after ``refresh``): every one when room may have
        grown since the last attempt at all of them, else those written since the last attempt. Marks them
        tried."""
        tried = set(self.waiting) if self._room_grew else self._fresh & self.waiting
        self._fresh.clear()
        self._room_grew = False
        return tried

    def nodes(self) -> list[dict[str, Any]]:
        """The stored nodes themselves, in key order (read, never changed or kept by the caller), listed
        again only after a node was written or removed (``refresh``)."""
        if self._nodes is None:
            self._nodes = self.store.peek_objects(self.node_type)
        return self._nodes

    def free(self, nodes: list[dict[str, Any]]) -> dict[str, Amounts]:
        """Node name → allocatable minus the requests of the live pods bound to it (``free_capacity``),
        worked out for a node when first asked for: a first fit asks for the first nodes with room, not
        for all of them (every node's room on every write was a seventh of a member's CPU)."""
        return FreeRoom(self, {node["metadata"]["name"]: node for node in nodes})

    def room(self, name: str, node: dict[str, Any]) -> Amounts:
        """One node's free room, its allocatable parsed once per node write (``refresh`` forgets them)."""
        allocatable = self._allocatable.get(name)
        if allocatable is None:
            allocatable = self._allocatable[name] = node_allocatable(node)
        used = self.used.get(name, {})
        return {**allocatable, **{r: allocatable.get(r, 0) - a for r, a in used.items()}}

    def _forget(self, key: ObjKey) -> None:
        self.waiting.discard(key)
        self._fresh.discard(key)
        known = self._bound.pop(key, None)
        if known is None:
            return
        self._room_grew = True  # gone, terminated or rewritten: its room may be free now
        host, requests = known
        used = self.used[host]
        for name, amount in requests.items():
            used[name] -= amount


class FreeRoom(dict[str, Amounts]):
    """``CapacityLedger.free``'s answer: a node's room is computed on first lookup, then kept (a first fit
    takes a bound pod's requests off it in place)."""

    def __init__(self, ledger: CapacityLedger, nodes: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self._ledger = ledger
        self._nodes = nodes

    def __missing__(self, name: str) -> Amounts:
        room = self[name] = self._ledger.room(name, self._nodes[name])
        return room
