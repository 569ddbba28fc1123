"""The simulator's "kubelet and controllers": keeps workload pods, binds pending pods, renders live status.

Invariants:
- Called with the store lock held (the cluster facade takes it), so reconciling is atomic per request.
- ``bound_at`` remembers, per pod, the clock time it was bound; pod and workload status are computed from it
  on every read (lazily), so no background thread is needed and readiness follows the injected clock.
  Every change of that computed status is also a write (``status_writes``), made by ``begin`` (due changes,
  at the start of a request or a watch's poll) and ``finish`` (the owners of the pods a request changed).
- Between ``begin`` and ``finish`` the clock is read once (``now``), so everything one request renders, and
  the writes ``begin`` made for it, agree on the time.
- After any change to pods, nodes or workloads, ``schedule`` binds every pending pod that now fits.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

from federation.model.jsonvalue import clone
from federation.sim.config import Faults, SimulatorConfig
from federation.sim.kinds import Registry, ResourceType
from federation.sim.ledger import CapacityLedger
from federation.sim.owners import OwnerIndex
from federation.sim.pods import (
    first_fit,
    is_terminated,
    node_name,
    pending_status,
    rfc3339,
    running_status,
    unschedulable_message,
)
from federation.sim.status_writes import StatusWrites
from federation.sim.store import ObjectStore
from federation.sim.workloads import WORKLOAD_KINDS, plan_pods, workload_status

PodKey = tuple[str, str]


def is_workload(rtype: ResourceType) -> bool:
    return rtype.group == "apps" and rtype.kind in WORKLOAD_KINDS


def is_pod(rtype: ResourceType) -> bool:
    return rtype.group == "" and rtype.kind == "Pod"


class Runtime:
    """Pod lifecycle and workload status for one simulated cluster."""

    def __init__(
        self,
        store: ObjectStore,
        registry: Registry,
        config: SimulatorConfig,
        faults: Faults,
        clock: Callable[[], float],
    ) -> None:
        self.store = store
        self.config = config
        self.faults = faults
        self.clock = clock
        self.rng = random.Random(config.seed)
        self.pods = _must(registry.lookup("", "pods"))
        self.nodes = _must(registry.lookup("", "nodes"))
        self.bound_at: dict[PodKey, float] = {}
        self.changed_at: dict[tuple[str, str, str], str] = {}
        self.ledger = CapacityLedger(store, self.pods, self.nodes)
        self.owners = OwnerIndex(store, self.pods)
        self._ip = 0
        self.frozen: float | None = None  # the request's time, between begin and finish
        self.status = StatusWrites(
            store, registry, config, faults, self.bound_at, self._crashing, self._owned
        )

    def now(self) -> float:
        return self.clock() if self.frozen is None else self.frozen

    def begin(self) -> None:
        """Start of a request (or a watch's poll): fix its time, and write every status change due by it."""
        self.frozen = self.clock()
        self.status.settle(self.frozen)

    def finish(self, since: int) -> None:
        """End of the request that ``begin`` started, when the resourceVersion was ``since``."""
        try:
            self.status.finish(since, self.now())
        finally:
            self.frozen = None

    # --- writes --------------------------------------------------------------------------------

    def stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Give a server-created object its identity metadata."""
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", rfc3339(self.now()))
        meta.setdefault("generation", 1)
        return obj

    def workload_changed(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        """Record the spec-change time and bring the workload's pods in line with it."""
        meta = obj["metadata"]
        self.changed_at[(rtype.plural, meta.get("namespace", ""), meta["name"])] = rfc3339(self.now())
        self.reconcile(obj)

    def _owned(self, workload: dict[str, Any]) -> list[dict[str, Any]]:
        """The stored pods the workload owns (``OwnerIndex``), in key order; not copies."""
        meta = workload["metadata"]
        return self.owners.owned(meta.get("namespace", ""), meta.get("uid"))

    def reconcile(self, workload: dict[str, Any]) -> None:
        namespace = workload["metadata"].get("namespace", "")
        pods = [clone(p) for p in self._owned(workload)]
        plan = plan_pods(workload, pods, self.rng)
        for name in plan.delete:
            self.remove_pod(namespace, name)
        for pod in plan.create:
            self.store.put(self.pods, self.stamp(pod))
        self.schedule()

    def remove_pod(self, namespace: str, name: str) -> None:
        pod = self.store.peek(self.pods, (namespace, name))
        last = self.render_pod(clone(pod)) if pod is not None else None  # what a watch's DELETED shows
        self.store.remove(self.pods, namespace, name, last)
        self.bound_at.pop((namespace, name), None)

    def delete_owned(self, rtype: ResourceType, workload: dict[str, Any]) -> None:
        """Cascade: remove the workload's pods and let pending pods take the freed room."""
        namespace = workload["metadata"].get("namespace", "")
        owned = [p["metadata"]["name"] for p in self._owned(workload)]
        for name in owned:
            self.remove_pod(namespace, name)
        self.changed_at.pop((rtype.plural, namespace, workload["metadata"]["name"]), None)
        self.schedule()

    def pod_created(self, pod: dict[str, Any]) -> None:
        """A pod written through the API: already bound pods start their readiness clock now."""
        if node_name(pod):
            self.bound_at.setdefault(_key(pod), self.now())
        self.schedule()

    def schedule(self) -> None:
        """Bind every pending pod that fits, first-fit in creation order; mark the rest Unschedulable. The
        pods tried are the ledger's ``to_try``: a pod that did not fit is tried again once room may have
        grown, not on every write."""
        self.ledger.refresh()  # the pods written since the last call, not every pod
        if not self.ledger.waiting:
            return
        # Read, never changed or kept: the stored nodes themselves (a copy of every node for every apply
        # was the largest single copy in a member's CPU under a federation's applies), listed again only
        # after a node write.
        nodes = self.ledger.nodes()
        free = self.ledger.free(nodes)
        waiting = (self.store.peek(self.pods, key) for key in self.ledger.to_try())
        pending = [clone(pod) for pod in waiting if pod is not None]
        pending.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
        for pod in pending:
            host = first_fit(pod, nodes, free)
            if host is not None:
                self._bind(pod, host, nodes)
            else:
                self._mark_pending(pod, unschedulable_message(pod, nodes, free))

    def _bind(self, pod: dict[str, Any], host: str, nodes: list[dict[str, Any]]) -> None:
        index = next(i for i, n in enumerate(nodes) if n["metadata"]["name"] == host)
        self._ip += 1
        pod["spec"]["nodeName"] = host
        pod["status"] = {
            "phase": "Running",
            "hostIP": f"10.0.{index // 250}.{index % 250 + 1}",
            "podIP": f"10.244.{self._ip // 250 % 250}.{self._ip % 250 + 1}",
        }
        self.bound_at[_key(pod)] = self.now()
        self.store.put(self.pods, pod)

    def _mark_pending(self, pod: dict[str, Any], message: str) -> None:
        status = pending_status(pod, message)
        if pod.get("status") != status:  # unchanged pending pods keep their resourceVersion
            pod["status"] = status
            self.store.put(self.pods, pod)

    # --- reads ---------------------------------------------------------------------------------

    def render_pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        bound = self.bound_at.get(_key(pod))
        if bound is None or is_terminated(pod):
            return pod
        crashing = self._crashing(pod)
        pod["status"] = running_status(pod, bound, self.now(), self.config.ready_delay, crashing)
        return pod

    def _crashing(self, pod: dict[str, Any]) -> bool:
        meta = pod["metadata"]
        namespace = meta.get("namespace", "")
        names = [meta["name"]] + [ref.get("name", "") for ref in meta.get("ownerReferences") or []]
        return any(self.faults.is_unhealthy(namespace, n) for n in names)

    def render_workload(self, rtype: ResourceType, workload: dict[str, Any]) -> dict[str, Any]:
        return self._with_status(rtype, workload, [clone(p) for p in self._owned(workload)])

    def render_workloads(self, rtype: ResourceType, workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``render_workload`` of each, its pods found by owner (``OwnerIndex``) and copied shallowly
        (``render_pod`` sets their status): a page of workloads reads only the pods they own."""
        return [self._with_status(rtype, w, [dict(pod) for pod in self._owned(w)]) for w in workloads]

    def _with_status(
        self, rtype: ResourceType, workload: dict[str, Any], pods: list[dict[str, Any]]
    ) -> dict[str, Any]:
        meta = workload["metadata"]
        namespace = meta.get("namespace", "")
        rendered = [self.render_pod(p) for p in pods]
        at = self.changed_at.get((rtype.plural, namespace, meta["name"]), meta.get("creationTimestamp", ""))
        workload["status"] = workload_status(workload, rendered, at)
        return workload


def _key(pod: dict[str, Any]) -> PodKey:
    return (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])


def _must(rtype: ResourceType | None) -> ResourceType:
    assert rtype is not None, "built-in resource types are always registered"
    return rtype
