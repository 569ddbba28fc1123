"""A member's resource summary from node and pod views (``summary.node_view``/``pod_view``), counted as
``cluster_watch`` counts them from an informer's changes, equals ``summarize_totals`` over the objects.

Property tests over generated nodes and pods (and sequences of adds, changes and deletes), a table of the
edge cases, and ``ClusterWatch`` over a fake watching client (no summary until synced, none when refused).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.members.cluster_watch import ClusterWatch, ClusterWatches, _Counted, summary_of
from federation.members.errors import MemberError
from federation.members.informer import Informer, Key
from federation.members.summary import (
    ClusterSummary,
    PodTotals,
    node_view,
    pod_view,
    summarize,
    summarize_totals,
    summarize_views,
)
from tests.members.helpers import wait_for

# -- generated objects -------------------------------------------------------------------------------

RESOURCES = ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "pods")
QUANTITY = {
    "cpu": st.sampled_from(["0", "100m", "250m", "1", "1500m", "2"]),
    "memory": st.sampled_from(["0", "64Mi", "1Gi", "1500Mi", "2G"]),
    "ephemeral-storage": st.sampled_from(["0", "1Gi", "10G"]),
    "nvidia.com/gpu": st.sampled_from(["0", "1", "2"]),
    "pods": st.sampled_from(["0", "1", "110"]),
}


def amounts() -> st.SearchStrategy[dict[str, str]]:
    return st.sets(st.sampled_from(RESOURCES), max_size=3).flatmap(
        lambda names: st.fixed_dictionaries({n: QUANTITY[n] for n in sorted(names)})
    )


def containers() -> st.SearchStrategy[list[dict[str, Any]]]:
    container = st.fixed_dictionaries(
        {"name": st.just("c")},
        optional={
            "resources": st.fixed_dictionaries({}, optional={"requests": amounts(), "limits": amounts()})
        },
    )
    return st.lists(container, max_size=3)


pods = st.builds(
    lambda cs, inits, overhead, node, phase: {
        "spec": {
            "containers": cs,
            **({"initContainers": inits} if inits else {}),
            **({"overhead": overhead} if overhead else {}),
            **({"nodeName": node} if node else {}),
        },
        "status": {"phase": phase} if phase else {},
    },
    containers(),
    containers(),
    amounts(),
    st.sampled_from(["", "n0", "n1"]),
    st.sampled_from([None, "Pending", "Running", "Succeeded", "Failed"]),
)
nodes = st.builds(
    lambda allocatable, ready: {
        "status": {
            "allocatable": allocatable,
            "conditions": [] if ready is None else [{"type": "Ready", "status": ready}],
        }
    },
    amounts(),
    st.sampled_from([None, "True", "False", "Unknown"]),
)


def from_views(node_list: list[dict[str, Any]], pod_list: list[dict[str, Any]]) -> ClusterSummary:
    return summarize_views(Counter(map(node_view, node_list)), Counter(map(pod_view, pod_list)))


def from_lists(node_list: list[dict[str, Any]], pod_list: list[dict[str, Any]]) -> ClusterSummary:
    totals = PodTotals()
    totals.add(pod_list)
    return summarize_totals(node_list, totals)


@settings(max_examples=150, deadline=None)
@given(st.lists(nodes, max_size=5), st.lists(pods, max_size=12))
def test_views_sum_to_what_the_lists_sum_to(
    node_list: list[dict[str, Any]], pod_list: list[dict[str, Any]]
) -> None:
    assert from_views(node_list, pod_list) == from_lists(node_list, pod_list)


CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = [
    ("nothing at all", [], []),
    ("a node without status", [{}], []),
    ("a pod without spec", [], [{}]),
    (
        "a request of zero is still a key",
        [],
        [{"spec": {"nodeName": "n0", "containers": [{"resources": {"requests": {"cpu": "0"}}}]}}],
    ),
    (
        "finished pods count nowhere, whatever they requested",
        [],
        [
            {
                "spec": {
                    "nodeName": "n0",
                    "containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}],
                },
                "status": {"phase": "Succeeded"},
            }
        ],
    ),
    (
        "an unbound finished pod is still allocating (Karmada's rule)",
        [],
        [
            {
                "spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": "Failed"},
            }
        ],
    ),
    (
        "identical pods multiply",
        [{"status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}] * 3,
        [{"spec": {"nodeName": "n0", "containers": [{"resources": {"limits": {"memory": "1Gi"}}}]}}] * 7,
    ),
]


@pytest.mark.parametrize(("node_list", "pod_list"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_views_equal_lists_on_edge_cases(
    node_list: list[dict[str, Any]], pod_list: list[dict[str, Any]]
) -> None:
    assert from_views(node_list, pod_list) == summarize(node_list, pod_list)


# -- the counts kept from an informer's changes ------------------------------------------------------


class EventsOnce:
    """A watching client whose next WATCH yields the events queued and ends: the informer's own ``_watch``
    runs them in the test's thread, so ``drain`` is what ``Informer`` hands out after exactly those
    events."""

    name = "m1"
    closed = False

    def __init__(self) -> None:
        self.queued: list[dict[str, Any]] = []

    def watch(self, *_: object) -> Iterator[dict[str, Any]]:
        events, self.queued = self.queued, []
        return iter(events)


# Each step: (pod slot, the pod now there or None for deleted), applied in batches between two catch-ups.
steps = st.lists(
    st.lists(st.tuples(st.integers(0, 5), st.none() | pods), min_size=1, max_size=6), min_size=1, max_size=8
)


@settings(max_examples=100, deadline=None)
@given(steps)
def test_counts_kept_from_changes_sum_to_what_the_current_pods_sum_to(
    batches: list[list[tuple[int, dict[str, Any] | None]]],
) -> None:
    client = EventsOnce()
    informer = Informer[Any](client, "v1", "Pod", "", pod_view)  # type: ignore[arg-type]
    counted: _Counted[Any] = _Counted(informer)
    current: dict[Key, dict[str, Any]] = {}
    for batch in batches:
        for slot, pod in batch:
            key = ("default", f"p{slot}")
            meta = {"namespace": key[0], "name": key[1], "resourceVersion": "2"}
            if pod is None:
                current.pop(key, None)
                client.queued.append({"type": "DELETED", "object": {"metadata": meta}})
            else:
                current[key] = pod
                client.queued.append({"type": "MODIFIED", "object": {**pod, "metadata": meta}})
        informer._watch("1")
        counted.catch_up()
        assert summarize_views({}, counted.counts) == summarize([], list(current.values()))
        assert all(counted.counts.values())  # a view no pod has any more is gone, not zero


# -- ClusterWatch over a fake member -----------------------------------------------------------------

NODE = {
    "metadata": {"name": "n0"},
    "status": {
        "allocatable": {"cpu": "4", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}
POD = {
    "metadata": {"namespace": "default", "name": "p0"},
    "spec": {"nodeName": "n0", "containers": [{"resources": {"requests": {"cpu": "250m"}}}]},
}


class FakeMember:
    """A watching client: LISTs that wait for ``release`` (or refuse), and watches that end when
    closed."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]], refuse: int | None = None) -> None:
        self.name = "m1"
        self.closed = False
        self.objects = objects
        self.refuse = refuse
        self.release = threading.Event()

    def list_for_watch(
        self, api_version: str, kind: str, selector: str, visit: Callable[[list[dict[str, Any]]], None]
    ) -> str:
        if self.refuse is not None:
            raise MemberError(self.name, f"LIST {kind}: {self.refuse}", status=self.refuse)
        assert self.release.wait(10)
        visit(self.objects.get(kind, []))
        return "1"

    def watch(
        self, api_version: str, kind: str, selector: str, resource_version: str, timeout_seconds: int
    ) -> QuietStream:
        return QuietStream(timeout_seconds)


class QuietStream:
    """A WATCH with no events: it ends at its timeout or when closed."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._closed.wait(self.timeout_seconds)
        yield from ()

    def close(self) -> None:
        self._closed.set()


def test_a_watch_gives_no_summary_until_both_informers_listed() -> None:
    member = FakeMember({"Node": [NODE], "Pod": [POD]})
    watch = ClusterWatch(member).start()  # type: ignore[arg-type]
    try:
        assert watch.summary() is None
        assert summary_of(watch, lambda: ClusterSummary({}, {})) == ClusterSummary({}, {})  # the LIST then
        member.release.set()
        wait_for(lambda: watch.synced, what="synced")
        assert watch.summary() == summarize([NODE], [POD])
    finally:
        watch.stop()
    assert not watch.synced


def test_a_watch_taking_in_its_list_is_waited_for_rather_than_listed_beside() -> None:
    member = FakeMember({"Node": [NODE], "Pod": [POD]})
    watch = ClusterWatch(member).start()  # type: ignore[arg-type]
    listed: list[str] = []

    def fallback() -> ClusterSummary:
        listed.append("LIST")
        return ClusterSummary({}, {})

    try:
        assert watch.listing
        # The wait runs out: listed beside, as without a wait.
        assert summary_of(watch, fallback, listing_wait_seconds=0.1) == ClusterSummary({}, {})
        assert listed == ["LIST"]
        threading.Timer(0.2, member.release.set).start()
        assert summary_of(watch, fallback, listing_wait_seconds=10) == summarize([NODE], [POD])
        assert listed == ["LIST"] and not watch.listing
    finally:
        watch.stop()


def test_a_failed_watch_is_listed_beside_at_once() -> None:
    watch = ClusterWatch(FakeMember({}, refuse=500)).start()  # type: ignore[arg-type]
    try:
        wait_for(lambda: not watch.listing, what="the informers' LIST failed")
        assert summary_of(watch, lambda: ClusterSummary({}, {}), listing_wait_seconds=60) == ClusterSummary(
            {}, {}
        )
    finally:
        watch.stop()


def test_a_member_that_refuses_gives_no_summary() -> None:
    watch = ClusterWatch(FakeMember({}, refuse=403)).start()  # type: ignore[arg-type]
    wait_for(lambda: watch.refused, what="refused")
    assert watch.summary() is None
    watch.stop()


def test_watches_follow_clusters_and_clients() -> None:
    made: list[FakeClusterWatch] = []

    class FakeClusterWatch:
        def __init__(self, client: Any) -> None:
            self.client, self.stopped = client, False
            made.append(self)

        def start(self) -> FakeClusterWatch:
            return self

        def stop(self) -> None:
            self.stopped = True

    watches = ClusterWatches(FakeClusterWatch)  # type: ignore[arg-type]
    one, other = object(), object()
    first = watches.ensure("m1", one)  # type: ignore[arg-type]
    assert watches.ensure("m1", one) is first  # type: ignore[arg-type]
    replaced = watches.ensure("m1", other)  # type: ignore[arg-type]  # rotated credentials
    assert replaced is not first and first.stopped  # type: ignore[attr-defined]
    watches.ensure("m2", one)  # type: ignore[arg-type]
    watches.retain({"m2"})
    assert replaced.stopped and "m1" not in watches and len(watches) == 1  # type: ignore[attr-defined]
    watches.close()
    assert all(w.stopped for w in made) and len(watches) == 0
