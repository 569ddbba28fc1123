"""The pods of each owner (a workload), kept up to date from the pods written since it last looked
(``ObjectStore.track``), as ``CapacityLedger`` keeps the scheduler's figures.

Why: a workload's write reconciles its pods and every read of it renders its status from them; finding
them by a scan of the namespace's pods (sorted, then matched by owner uid) made each Deployment apply cost
the whole namespace: at 10,000 Deployments and pods per member, the members, not the control plane, set
the pace of the benchmark (``bench/pipeline.py --bindings 10000``). A real API server's write does not
slow down with the number of objects, and neither should the simulator's.

Invariants:
- ``owned(namespace, uid)`` is exactly what ``[p for p in peek_objects(pods, namespace) if owned_by(p, w)]``
  gives for a workload of that uid: the stored pods whose ``ownerReferences`` name the uid, in key order.
- A write of one pod costs the index that pod (``refresh``), whatever the number of pods.
- Used only under the store lock (the runtime is), so no write is seen half way.
"""

from __future__ import annotations

from typing import Any

from federation.sim.kinds import ResourceType
from federation.sim.store import ObjectStore, ObjKey

OwnerKey = tuple[str, str]  # (namespace, owner uid)


class OwnerIndex:
    def __init__(self, store: ObjectStore, pods: ResourceType) -> None:
        self.store = store
        self.pods = pods
        self._changed = store.track(pods)
        self._owners: dict[ObjKey, tuple[str, ...]] = {}  # pod → the uids it names
        self._owned: dict[OwnerKey, set[ObjKey]] = {}

    def owned(self, namespace: str, uid: Any) -> list[dict[str, Any]]:
        """The stored pods (not copies: the caller neither changes nor keeps them) owned by ``uid``."""
        with self.store.lock:
            self.refresh()
            keys = sorted(self._owned.get((namespace, str(uid)), ()))
            found = (self.store.peek(self.pods, key) for key in keys)
            return [pod for pod in found if pod is not None]

    def refresh(self) -> None:
        """Account for every pod written or removed since the last refresh."""
        for key in self._changed:
            self._forget(key)
            pod = self.store.peek(self.pods, key)
            if pod is None:
                continue
            uids = tuple(str(ref.get("uid")) for ref in pod["metadata"].get("ownerReferences") or [])
            self._owners[key] = uids
            for uid in uids:
                self._owned.setdefault((key[0], uid), set()).add(key)
        self._changed.clear()

    def _forget(self, key: ObjKey) -> None:
        for uid in self._owners.pop(key, ()):
            owned = self._owned.get((key[0], uid))
            if owned is not None:
                owned.discard(key)
                if not owned:
                    del self._owned[(key[0], uid)]
