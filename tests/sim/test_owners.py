"""The pods of each owner, kept from the pods written since the index last looked, are always what a scan
of the namespace's pods matched by owner uid gives (``workloads.owned_by``), in the same order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.sim.kinds import ResourceType
from federation.sim.owners import OwnerIndex
from federation.sim.store import ObjectStore
from federation.sim.workloads import owned_by
from tests.sim.test_ledger import _pods_type

NAMES = [f"p{i}" for i in range(6)]
NAMESPACES = ["ns", "other"]
UIDS = ["u1", "u2", "u3"]


def _pod(namespace: str, name: str, owners: list[str]) -> dict[str, Any]:
    refs = [{"kind": "ReplicaSet", "name": f"rs-{uid}", "uid": uid} for uid in owners]
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": refs}, "spec": {}}


WRITE = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from(NAMESPACES),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(UIDS), max_size=2),  # no owner, one, or two
    ),
    st.tuples(st.just("remove"), st.sampled_from(NAMESPACES), st.sampled_from(NAMES)),
)


@settings(max_examples=200, deadline=None)
@given(before=st.lists(WRITE, max_size=8), batches=st.lists(st.lists(WRITE, max_size=6), max_size=5))
def test_the_index_agrees_with_a_scan_of_the_namespace(before: list[Any], batches: list[list[Any]]) -> None:
    store, pods = ObjectStore(), _pods_type()
    for write in before:  # pods there before the index starts
        _apply(store, pods, write)
    index = OwnerIndex(store, pods)
    for batch in [*batches, []]:
        for write in batch:
            _apply(store, pods, write)
        for namespace in NAMESPACES:
            for uid in UIDS:
                workload = {"metadata": {"namespace": namespace, "uid": uid}}
                scanned = [p for p in store.peek_objects(pods, namespace) if owned_by(p, workload)]
                assert index.owned(namespace, uid) == scanned


def _apply(store: ObjectStore, pods: ResourceType, write: tuple[Any, ...]) -> None:
    if write[0] == "put":
        _, namespace, name, owners = write
        store.put(pods, _pod(namespace, name, owners))
    else:
        store.remove(pods, write[1], write[2])
