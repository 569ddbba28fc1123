"""The simulated scheduler's capacity ledger, kept from the pods written since it last looked, always says
what a scan of every pod says (``free_capacity`` and the pending pods), whatever the writes; and it hands the
scheduler every pending pod when room may have grown, else only the pending pods written since its last
attempt."""

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
    return _builtin("pods")


def _builtin(plural: str) -> ResourceType:
    found = Registry().lookup("", plural)
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
    ledger = CapacityLedger(store, pods, _builtin("nodes"))
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


def _tried(ledger: CapacityLedger) -> set[str]:
    ledger.refresh()
    return {name for _, name in ledger.to_try()}


def test_only_pods_written_since_the_last_attempt_are_tried_while_no_room_grows() -> None:
    store, pods, nodes = ObjectStore(), _pods_type(), _builtin("nodes")
    store.put(pods, _pod("bound", "n0", "1", "Running"))
    store.put(pods, _pod("old", "", "1", "Pending"))
    ledger = CapacityLedger(store, pods, nodes)
    assert _tried(ledger) == {"old"}  # the first attempt: every pending pod
    assert _tried(ledger) == set()  # nothing written since
    store.put(pods, _pod("new", "", "1", "Pending"))
    store.put(pods, _pod("other", "n1", "1", "Running"))  # a pod bound: room shrinks, never grows
    assert _tried(ledger) == {"new"}
    store.put(pods, _pod("old", "", "1", "Pending"))  # rewritten (its Unschedulable condition): tried again
    assert _tried(ledger) == {"old"}
    assert ledger.waiting == {("ns", "old"), ("ns", "new")}


def test_every_pending_pod_is_tried_once_room_may_have_grown() -> None:
    store, pods, nodes = ObjectStore(), _pods_type(), _builtin("nodes")
    store.put(pods, _pod("bound", "n0", "1", "Running"))
    store.put(pods, _pod("done", "n1", "1", "Running"))
    for name in ("a", "b"):
        store.put(pods, _pod(name, "", "1", "Pending"))
    ledger = CapacityLedger(store, pods, nodes)
    assert _tried(ledger) == {"a", "b"}
    store.remove(pods, "ns", "bound")  # a bound pod gone
    assert _tried(ledger) == {"a", "b"}
    assert _tried(ledger) == set()
    store.put(pods, _pod("done", "n1", "1", "Succeeded"))  # a bound pod terminated
    assert _tried(ledger) == {"a", "b"}
    store.put(nodes, {**NODES[0], "metadata": {"name": "n0", "labels": {"zone": "z"}}})  # a node written
    assert _tried(ledger) == {"a", "b"}
    assert _tried(ledger) == set()
