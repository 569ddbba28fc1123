"""A member's LISTs are read a page at a time and each page is dropped before the next is read (issue 12,
memory): a decoded member object is 6-9 KB, so a whole LIST held at once made the server's high-water
mark grow with the member's objects. Real simulator over TLS; ``LIST_PAGE`` made small so a handful of
objects spans several pages; the member objects still alive when each page is requested are counted by
decoding them as a dict subclass whose instances are counted until they are freed."""

from __future__ import annotations

import json
import weakref
from typing import Any

import pytest

from federation.members import client as member_client
from federation.members.client import KubernetesMemberClient
from federation.members.summary import summarize
from tests.members.helpers import deployment

PAGE = 3


class _Decoded(dict[str, Any]):
    """A decoded member object (a dict with ``metadata.name``), counted per path it was read from while
    alive."""

    alive: dict[str, int] = {}
    reading = ""  # the path of the request being decoded

    def __init__(self, decoded: dict[str, Any]) -> None:
        super().__init__(decoded)
        path = _Decoded.reading
        _Decoded.alive[path] = _Decoded.alive.get(path, 0) + 1
        weakref.finalize(self, _Decoded._freed, path)

    @staticmethod
    def _freed(path: str) -> None:
        _Decoded.alive[path] -= 1


@pytest.fixture
def alive_at_pages(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """path → how many decoded member objects were alive when each of its pages was requested."""
    _Decoded.alive = {}

    def hook(decoded: dict[str, Any]) -> dict[str, Any]:
        if isinstance(decoded.get("metadata"), dict) and "name" in decoded["metadata"]:
            return _Decoded(decoded)
        return decoded

    class Json:
        loads = staticmethod(lambda text: json.loads(text, object_hook=hook))

    seen: dict[str, list[int]] = {}
    real = KubernetesMemberClient.request

    def request(self: KubernetesMemberClient, method: str, path: str, **kwargs: Any) -> Any:
        if method == "GET" and any(name == "limit" for name, _ in kwargs.get("query") or []):
            seen.setdefault(path, []).append(_Decoded.alive.get(path, 0))
        _Decoded.reading = path
        return real(self, method, path, **kwargs)

    monkeypatch.setattr(member_client, "json", Json)
    monkeypatch.setattr(member_client, "LIST_PAGE", PAGE)
    monkeypatch.setattr(KubernetesMemberClient, "request", request)
    return seen


def test_a_labelled_list_hands_over_pages_and_keeps_none(
    start_sim: Any, alive_at_pages: dict[str, list[int]]
) -> None:
    sim = start_sim(nodes=2, node_cpu="16")
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    for index in range(8):
        manifest = deployment(f"web{index}", 1)
        manifest["metadata"]["labels"]["karmada.io/managed"] = "true"
        client.apply(manifest)
    pages: list[list[str]] = []
    client.visit_labelled(
        "apps/v1",
        "Deployment",
        "karmada.io/managed=true",
        lambda items: pages.append([o["metadata"]["name"] for o in items]),
    )
    assert [len(p) for p in pages] == [3, 3, 2]
    assert sorted(n for p in pages for n in p) == [f"web{i}" for i in range(8)]
    # No object of an earlier page was alive when the next one was read.
    assert alive_at_pages["/apis/apps/v1/deployments"] == [0, 0, 0]
    assert len(client.list_labelled("apps/v1", "Deployment", "karmada.io/managed=true")) == 8


def test_the_resource_summary_sums_the_pods_a_page_at_a_time(
    start_sim: Any, alive_at_pages: dict[str, list[int]]
) -> None:
    sim = start_sim(nodes=2, node_cpu="4", node_memory="8Gi")
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    client.apply(deployment("small", 5, cpu="500m", memory="256Mi"))
    client.apply(deployment("large", 3, cpu="3", memory="1Gi"))  # some stay pending: allocating
    summary = client.resource_summary()
    pages = alive_at_pages["/api/v1/pods"]
    assert len(pages) == 3 and pages == [0, 0, 0], pages  # 8 pods in pages of 3, none kept
    whole = member_client.KubernetesMemberClient.request  # the same numbers as from one unpaged LIST
    nodes = whole(client, "GET", "/api/v1/nodes")["items"]
    pods = whole(client, "GET", "/api/v1/pods")["items"]
    assert summary == summarize(nodes, pods)
    assert summary.resource_summary["allocated"]["pods"] != "0"
    assert summary.resource_summary["allocating"]["pods"] != "0"
