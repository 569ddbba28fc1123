"""The simulated scheduler's capacity ledger, kept from the pods written since it last looked, always says
what a scan of every pod says (``free_capacity`` and the pending pods), whatever the writes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.sim.kinds import Registry, ResourceType
from federation.sim.ledger import CapacityLedger
from federation.sim.pods import free_capacity, is_terminated, node_name
from federation.sim.store import ObjectStore

NODES = [
    {"metadata": {"name": n}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    for n in ("n0", "n1")
]
NAMES = [f"p{i}" for i in range(6)]


def _pods_type() -> ResourceType:
    found = Registry().lookup("", "pods")
    assert found is not None
    return found


def _pod(name: str, host: str, cpu: str, phase: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if host:
        spec["nodeName"] = host
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec, "status": {"phase": phase}}


WRITE = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from(NAMES),
        st.sampled_from(["", "n0", "n1", "gone-node"]),
        st.sampled_from(["100m", "1", "2500m"]),
        st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
    ),
    st.tuples(st.just("remove"), st.sampled_from(NAMES)),
)


@settings(max_examples=200, deadline=None)
@given(before=st.lists(WRITE, max_size=8), batches=st.lists(st.lists(WRITE, max_size=6), max_size=5))
def test_the_ledger_agrees_with_a_scan_of_every_pod(before: list[Any], batches: list[list[Any]]) -> None:
    store, pods = ObjectStore(), _pods_type()
    for write in before:  # pods there before the ledger starts
        _apply(store, pods, write)
    ledger = CapacityLedger(store, pods)
    for batch in [*batches, []]:
        for write in batch:
            _apply(store, pods, write)
        ledger.refresh()
        everything = store.list_objects(pods)
        assert ledger.free(NODES) == free_capacity(NODES, everything)
        waiting = {
            ("ns", p["metadata"]["name"]) for p in everything if not node_name(p) and not is_terminated(p)
        }
        assert ledger.waiting == waiting


def _apply(store: ObjectStore, pods: ResourceType, write: tuple[Any, ...]) -> None:
    if write[0] == "put":
        _, name, host, cpu, phase = write
        store.put(pods, _pod(name, host, cpu, phase))
    else:
        store.remove(pods, "ns", write[1])
