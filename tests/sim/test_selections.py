"""A remembered LIST selection (``ObjectStore.peek_selected``) is always what a fresh scan of the stored
objects selects: after any sequence of writes of its own type and of another type, asked in between."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.sim.kinds import ResourceType
from federation.sim.selectors import label_selector
from federation.sim.store import ObjectStore

DEPLOYMENTS = ResourceType("apps", "v1", "Deployment", "deployments", True)
CONFIG_MAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True)
SELECTORS = ["", "tier=front", "tier!=front", "managed"]
NAMESPACES = [None, "a", "b"]

WRITE = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from([DEPLOYMENTS, CONFIG_MAPS]),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["x", "y", "z"]),
        st.dictionaries(st.sampled_from(["tier", "managed"]), st.sampled_from(["front", "back"]), max_size=2),
    ),
    st.tuples(
        st.just("remove"),
        st.sampled_from([DEPLOYMENTS, CONFIG_MAPS]),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["x", "y"]),
    ),
    st.tuples(st.just("ask"), st.sampled_from(NAMESPACES), st.sampled_from(SELECTORS)),
)


def _scan(store: ObjectStore, namespace: str | None, selector: str) -> list[dict[str, Any]]:
    match = label_selector(selector)
    return [o for o in store.peek_objects(DEPLOYMENTS, namespace) if match(o)]


@settings(max_examples=300, deadline=None)
@given(writes=st.lists(WRITE, max_size=25))
def test_a_remembered_selection_is_what_a_scan_selects(writes: list[Any]) -> None:
    store = ObjectStore()
    for write in writes:
        if write[0] == "put":
            _, rtype, namespace, name, labels = write
            store.put(rtype, {"metadata": {"name": name, "namespace": namespace, "labels": labels}})
        elif write[0] == "remove":
            _, rtype, namespace, name = write
            store.remove(rtype, namespace, name)
        else:
            _, namespace, selector = write
            remembered = store.peek_selected(DEPLOYMENTS, namespace, selector, label_selector(selector))
            assert remembered == _scan(store, namespace, selector)
    for namespace in NAMESPACES:
        for selector in SELECTORS:
            remembered = store.peek_selected(DEPLOYMENTS, namespace, selector, label_selector(selector))
            assert remembered == _scan(store, namespace, selector)


def test_asked_again_without_a_write_it_is_not_scanned_again() -> None:
    store = ObjectStore()
    store.put(DEPLOYMENTS, {"metadata": {"name": "x", "namespace": "a", "labels": {"tier": "front"}}})
    calls: list[str] = []
    match = label_selector("tier=front")

    def counting(obj: dict[str, Any]) -> bool:
        calls.append(obj["metadata"]["name"])
        return match(obj)

    first = store.peek_selected(DEPLOYMENTS, None, "tier=front", counting)
    store.put(CONFIG_MAPS, {"metadata": {"name": "c", "namespace": "a"}})  # another type: kept
    assert store.peek_selected(DEPLOYMENTS, None, "tier=front", counting) is first
    assert calls == ["x"]
    store.put(DEPLOYMENTS, {"metadata": {"name": "y", "namespace": "a", "labels": {"tier": "front"}}})
    assert [
        o["metadata"]["name"] for o in store.peek_selected(DEPLOYMENTS, None, "tier=front", counting)
    ] == [
        "x",
        "y",
    ]
    assert calls == ["x", "x", "y"]
