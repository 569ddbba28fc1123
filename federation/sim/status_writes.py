"""Status the simulator computes on read, made into writes: what a kubelet and the workload controllers
would write in a real cluster, each taking a fresh resourceVersion (``ObjectStore.touch``), so a watch sees
it as MODIFIED and a LIST after it shows the same status under the same resourceVersion.

Invariants:
- A pod's rendered status changes only when it is written, when ``ready_delay`` has passed since it was
  bound (Ready), when it restarts while crash-looping (every ``restart_period``), or when the faults'
  unhealthy set starts or stops naming it or its workload. A workload's rendered status changes only when
  it is written or its pods change (written, touched, removed).
- Time-based changes need no thread and follow the injected clock: a heap holds each bound pod's next due
  time (one live entry per pod, in ``_next``; superseded heap entries are skipped), and ``settle(now)``
  touches every pod due at or before ``now``, then plans its next change.
- ``settle`` then touches each workload whose pods changed since the last look, once, unless the workload
  was itself written after ``since`` (in the same request: no reader has seen it between its own write and
  its pods' changes, so its write's resourceVersion already stands for the status every reader will see).
  A pod write that changes nothing is no write (the cluster skips it), so it touches nobody.
- Runs under the store lock only (the cluster calls it at the start and end of every request and at each
  poll of an open watch). With nothing due, nothing new and the faults unchanged it costs O(1).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from federation.sim.changes import DELETED, ObjKey, TypeKey
from federation.sim.config import Faults, SimulatorConfig
from federation.sim.kinds import Registry, ResourceType
from federation.sim.pods import is_terminated, restart_period
from federation.sim.store import ObjectStore
from federation.sim.workloads import WORKLOAD_KINDS


class StatusWrites:
    def __init__(
        self,
        store: ObjectStore,
        registry: Registry,
        config: SimulatorConfig,
        faults: Faults,
        bound_at: dict[ObjKey, float],
        crashing: Callable[[dict[str, Any]], bool],
        owned: Callable[[dict[str, Any]], list[dict[str, Any]]],
    ) -> None:
        self.store = store
        self.ready_delay = config.ready_delay
        self.faults = faults
        self.bound_at = bound_at
        self.crashing = crashing
        self.owned = owned
        self.pods = _must(registry.by_kind("", "Pod"))
        self.workloads = {kind: _must(registry.by_kind("apps", kind)) for kind in WORKLOAD_KINDS}
        self._pod_changes = store.changes.follow(self.pods.key)
        self._due: list[tuple[float, ObjKey]] = []
        self._next: dict[ObjKey, float] = {}
        self._dirty: dict[tuple[TypeKey, ObjKey], ResourceType] = {}  # owners whose pods changed
        self._faults_seen = faults.generation
        self._unhealthy = frozenset(faults.unhealthy)

    def settle(self, now: float) -> None:
        """Make every status change due by ``now`` a write (start of a request, poll of a watch)."""
        since = self.store.rv
        self._follow(now)
        self._faults_changed(now)
        self._due_pods(now)
        self._follow(now)
        self._touch_owners(since)

    def finish(self, since: int, now: float) -> None:
        """End of a request that started at ``since``: the owners of the pods it changed."""
        self._follow(now)
        self._touch_owners(since)

    def _follow(self, now: float) -> None:
        for change in self._pod_changes:
            for rtype, key in self._owners_of(change.obj):
                self._dirty[(rtype.key, key)] = rtype
            if change.event == DELETED:
                self._next.pop(change.key, None)
            else:
                self._plan(change.key, now)
        self._pod_changes.clear()

    def _plan(self, key: ObjKey, now: float) -> None:
        pod, bound = self.store.peek(self.pods, key), self.bound_at.get(key)
        due = None
        if pod is not None and bound is not None and not is_terminated(pod):
            due = self._next_change(pod, bound, now)
        if due is None:
            self._next.pop(key, None)
        elif self._next.get(key) != due:
            self._next[key] = due
            heapq.heappush(self._due, (due, key))

    def _next_change(self, pod: dict[str, Any], bound: float, now: float) -> float | None:
        """When the pod's rendered status next changes by itself: its next restart, or turning Ready."""
        if self.crashing(pod):
            period = restart_period(self.ready_delay)
            due = bound + (int((now - bound) / period) + 1) * period
            while due <= now:  # float rounding must not plan a change that is already past
                due += period
            return due
        ready_at = bound + self.ready_delay
        return ready_at if now < ready_at else None

    def _due_pods(self, now: float) -> None:
        while self._due and self._due[0][0] <= now:
            due, key = heapq.heappop(self._due)
            if self._next.get(key) == due:
                del self._next[key]
                self.store.touch(self.pods, key)

    def _faults_changed(self, now: float) -> None:
        """The pods (bound ones: the others render no running status) and workloads that the unhealthy
        set starts or stops naming. Faults count their changes, so an unchanged set costs one compare."""
        if self.faults.generation == self._faults_seen:
            return
        self._faults_seen = self.faults.generation
        unhealthy = frozenset(self.faults.unhealthy)
        changed, self._unhealthy = sorted(unhealthy ^ self._unhealthy), unhealthy
        for name in changed:
            namespace, _, obj_name = name.partition("/")
            self._touch_named((namespace, obj_name))

    def _touch_named(self, key: ObjKey) -> None:
        pods = [self.store.peek(self.pods, key)]
        for rtype in self.workloads.values():
            workload = self.store.peek(rtype, key)
            if workload is not None:
                self.store.touch(rtype, key)
                pods.extend(self.owned(workload))
        for pod in pods:
            if pod is not None and _key(pod) in self.bound_at:
                self.store.touch(self.pods, _key(pod))

    def _owners_of(self, pod: dict[str, Any]) -> list[tuple[ResourceType, ObjKey]]:
        namespace = pod["metadata"].get("namespace", "")
        refs = pod["metadata"].get("ownerReferences") or []
        found = ((self.workloads.get(ref.get("kind", "")), ref.get("name", "")) for ref in refs)
        return [(rtype, (namespace, name)) for rtype, name in found if rtype is not None]

    def _touch_owners(self, since: int) -> None:
        for (_, key), rtype in sorted(self._dirty.items()):
            owner = self.store.peek(rtype, key)
            if owner is not None and int(owner["metadata"]["resourceVersion"]) <= since:
                self.store.touch(rtype, key)
        self._dirty.clear()


def _key(pod: dict[str, Any]) -> ObjKey:
    return (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])


def _must(rtype: ResourceType | None) -> ResourceType:
    assert rtype is not None, "built-in resource types are always registered"
    return rtype
