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
        free = ledger.free(NODES)  # worked out node by node as asked for
        assert {name: free[name] for name in ("n1", "n0")} == free_capacity(NODES, everything)
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


def test_a_nodes_room_follows_its_rewritten_allocatable() -> None:
    store, pods, nodes = ObjectStore(), _pods_type(), _builtin("nodes")
    store.put(pods, _pod("bound", "n0", "1", "Running"))
    ledger = CapacityLedger(store, pods, nodes)
    ledger.refresh()
    assert ledger.free(NODES)["n0"]["cpu"] == 7000
    bigger = {"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "32", "pods": "110"}}}
    store.put(nodes, bigger)
    ledger.refresh()
    room = ledger.free([bigger, NODES[1]])
    assert room["n0"]["cpu"] == 31000 and room["n1"]["cpu"] == 8000
    room["n0"]["cpu"] -= 500  # a first fit takes a pod's requests off the room it was handed
    assert room["n0"]["cpu"] == 30500
    assert ledger.free([bigger])["n0"]["cpu"] == 31000  # a new attempt starts from the ledger again


def test_the_node_list_is_listed_again_after_a_node_write_or_removal() -> None:
    store, pods, nodes = ObjectStore(), _pods_type(), _builtin("nodes")
    for node in NODES:
        store.put(nodes, node)
    ledger = CapacityLedger(store, pods, nodes)
    ledger.refresh()
    assert [n["metadata"]["name"] for n in ledger.nodes()] == ["n0", "n1"]
    store.put(nodes, {"metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "1"}}})
    ledger.refresh()
    assert [n["metadata"]["name"] for n in ledger.nodes()] == ["n0", "n1", "n2"]
    store.remove(nodes, "", "n0")
    ledger.refresh()
    assert [n["metadata"]["name"] for n in ledger.nodes()] == ["n1", "n2"]
    assert ledger.free(ledger.nodes())["n2"]["cpu"] == 1000
