"""The informer (LIST, then WATCH from the list's resourceVersion) against a scripted client: what it keeps,
what it hands out, and how it recovers (410 Expired, a member gone and back, a member that refuses)."""

from __future__ import annotations

import queue
import sys
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

from federation.members import informer as informer_module
from federation.members.errors import MemberError
from federation.members.informer import Informer, joined_key, key_of, shared_name_key
from federation.shared_instances import SLACK
from tests.members.helpers import wait_for

END = object()  # ends the current stream (the server's timeout)


def obj(name: str, rv: int, phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(rv)},
        "status": {"phase": phase},
    }


class ScriptedClient:
    """LISTs answered from ``lists`` (an item may be a MemberError), WATCH events from a queue."""

    name = "m1"

    def __init__(self, lists: list[Any]) -> None:
        self.closed = False
        self.lists = lists
        self.events: queue.Queue[Any] = queue.Queue()
        self.watched_from: list[str] = []
        self.listed = 0

    def list_for_watch(self, api_version: str, kind: str, selector: str, visit: Callable[..., None]) -> str:
        self.listed += 1
        answer = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        if isinstance(answer, MemberError):
            raise answer
        items, version = answer
        visit(items)
        return str(version)

    def watch(self, api_version: str, kind: str, selector: str, rv: str, timeout: int) -> ScriptedStream:
        self.watched_from.append(rv)
        return ScriptedStream(self)


class ScriptedStream:
    """One WATCH: the client's queued events until ``END``; ``close`` ends it."""

    def __init__(self, client: ScriptedClient) -> None:
        self.client = client

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while not self.client.closed:
            event = self.client.events.get()
            if event is END:
                return
            if isinstance(event, MemberError):
                raise event
            yield event

    def close(self) -> None:
        self.client.events.put(END)


def phase_of(o: dict[str, Any]) -> str:
    return str(o["status"]["phase"])


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(informer_module, "BACKOFF_START_SECONDS", 0.01)


def started(client: ScriptedClient, woken: list[int]) -> Informer[str]:
    return Informer(client, "v1", "Pod", "a=b", phase_of, lambda: woken.append(1)).start()


def test_events_change_the_cache_and_only_changed_projections_are_handed_out_once() -> None:
    client = ScriptedClient([([obj("a", 1), obj("b", 2)], 2)])
    woken: list[int] = []
    informer = started(client, woken)
    try:
        wait_for(lambda: informer.synced and client.watched_from == ["2"], what="listed and watching")
        assert informer.drain() == {("ns", "a"): (None, "Running"), ("ns", "b"): (None, "Running")}
        assert len(woken) == 1
        client.events.put({"type": "MODIFIED", "object": obj("a", 3)})  # same projection: nothing
        client.events.put({"type": "MODIFIED", "object": obj("b", 4, "Failed")})
        client.events.put({"type": "ADDED", "object": obj("c", 5)})
        client.events.put({"type": "DELETED", "object": obj("a", 6)})
        client.events.put({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})
        client.events.put(END)
        wait_for(lambda: client.watched_from == ["2", "9"], what="the next stream from the bookmark")
        assert informer.drain() == {
            ("ns", "a"): ("Running", None),
            ("ns", "b"): ("Running", "Failed"),
            ("ns", "c"): (None, "Running"),
        }
        assert len(woken) == 2  # once per drain, not once per event
        assert informer.get(("ns", "a")) is None and informer.get(("ns", "b")) == "Failed"
        assert informer.drain() == {}
    finally:
        informer.stop()


def test_an_expired_watch_lists_again_and_hands_out_only_what_differs() -> None:
    client = ScriptedClient([([obj("a", 1), obj("b", 2)], 2), ([obj("a", 1), obj("b", 7, "Failed")], 7)])
    informer = started(client, [])
    try:
        wait_for(lambda: client.watched_from == ["2"], what="watching")
        informer.drain()
        client.events.put({"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}})
        wait_for(lambda: client.watched_from == ["2", "7"], what="listed again and watching from its version")
        assert informer.drain() == {("ns", "b"): ("Running", "Failed")}
        assert informer.synced
    finally:
        informer.stop()


def test_a_member_gone_is_not_synced_until_it_answers_a_list_again() -> None:
    gone = MemberError("m1", "unreachable", kind="unreachable")
    client = ScriptedClient([([obj("a", 1)], 1), gone, gone, ([obj("a", 1)], 3)])
    informer = started(client, [])
    try:
        wait_for(lambda: informer.synced, what="synced")
        client.events.put(gone)  # the stream breaks; the next two LISTs fail
        wait_for(lambda: client.watched_from[-1:] == ["3"], what="watching again after two failed lists")
        assert informer.synced and informer.error is None and client.listed == 4
    finally:
        informer.stop()


def test_a_member_that_refuses_ends_the_informer_with_refused_set() -> None:
    client = ScriptedClient([MemberError("m1", "forbidden", kind="forbidden", status=403)])
    informer = started(client, [])
    wait_for(lambda: not informer.alive, what="the informer ended")
    assert informer.refused is not None and not informer.synced


def test_stop_ends_the_thread() -> None:
    client = ScriptedClient([([obj("a", 1)], 1)])
    informer = started(client, [])
    wait_for(lambda: client.watched_from == ["1"], what="watching")
    informer.stop()
    wait_for(lambda: not informer.alive, what="the thread ended")


def test_equal_projections_are_kept_once_and_a_keys_namespace_is_interned() -> None:
    # Decoded from JSON as a member's answer is: equal strings, distinct objects.
    listed = orjson.loads(orjson.dumps([obj("a", 1), obj("b", 2), obj("c", 3, "Pending")]))
    client = ScriptedClient([(listed, 3)])
    informer = started(client, [])
    try:
        wait_for(lambda: informer.synced and client.watched_from == ["3"], what="listed and watching")
        client.events.put({"type": "ADDED", "object": orjson.loads(orjson.dumps(obj("d", 4)))})
        wait_for(lambda: informer.get(("ns", "d")) is not None, what="the added object")
        assert informer.get(("ns", "a")) is informer.get(("ns", "b")) is informer.get(("ns", "d"))
        assert informer.get(("ns", "c")) == "Pending"
        namespaces = {id(key[0]) for key in informer._cache}
        assert len(namespaces) == 1
    finally:
        informer.stop()


def test_projections_no_object_has_any_more_are_not_kept() -> None:
    client = ScriptedClient([([obj("a", 1)], 1)])
    informer = started(client, [])
    try:
        wait_for(lambda: informer.synced and client.watched_from == ["1"], what="listed and watching")
        phases = 3 * SLACK
        for rv in range(2, phases + 2):  # one object through thousands of distinct projections
            client.events.put({"type": "MODIFIED", "object": obj("a", rv, f"phase-{rv}")})
        wait_for(lambda: informer.get(("ns", "a")) == f"phase-{phases + 1}", what="the last event")
        assert len(informer._shared) <= 2 * len(informer._cache) + SLACK + 1
    finally:
        informer.stop()


def test_a_drain_hands_out_what_the_previous_drain_saw_and_skips_a_change_undone() -> None:
    client = ScriptedClient([([obj("a", 1), obj("b", 2)], 2)])
    informer = started(client, [])
    try:
        wait_for(lambda: client.watched_from == ["2"], what="watching")
        informer.drain()
        client.events.put({"type": "MODIFIED", "object": obj("a", 3, "Failed")})
        client.events.put({"type": "MODIFIED", "object": obj("a", 4, "Succeeded")})  # then: still Running
        client.events.put({"type": "MODIFIED", "object": obj("b", 5, "Failed")})
        client.events.put({"type": "MODIFIED", "object": obj("b", 6)})  # back to Running: no change
        client.events.put(END)
        wait_for(lambda: client.watched_from == ["2", "6"], what="the next stream")
        assert informer.drain() == {("ns", "a"): ("Running", "Succeeded")}
    finally:
        informer.stop()


def test_keys_are_what_the_consumer_asks_for() -> None:
    for key, expected in (
        (key_of, ("ns", "web-1")),
        (shared_name_key, ("ns", "web-1")),
        (joined_key, "ns/web-1"),
    ):
        name = "".join(["web-", "1"])  # built at run time: not interned by the compiler
        client = ScriptedClient([([obj(name, 1)], 1)])
        informer = Informer(client, "v1", "Pod", "", phase_of, key=key).start()
        try:
            wait_for(lambda informer=informer: informer.synced, what="listed")
            assert informer.drain() == {expected: (None, "Running")}
            assert informer.get(expected) == "Running"
        finally:
            informer.stop()
    name = "".join(["web-", "2"])
    assert key_of(obj(name, 1))[1] is not sys.intern("web-2")
    assert shared_name_key(obj("".join(["web-", "2"]), 1))[1] is sys.intern("web-2")  # one string per name
    assert joined_key({"metadata": {"name": "node-1"}}) == "node-1"  # cluster-scoped
