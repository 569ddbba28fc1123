"""Watch over real HTTP: list-then-watch, selectors, the legacy paths, 410 Expired, bookmarks, Table
events, and a stream that ends when the client leaves or the server stops."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from federation.store import changefeed
from tests.conftest import RunningServer, start_server

from .watching import WatchReader, summary, wait_until

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}}


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    running = start_server(tmp_path, api={"watch_bookmark_seconds": 0.2})
    try:
        yield running
    finally:
        running.process.stop()


def test_list_then_watch_sees_added_modified_deleted_in_order(tmp_path: Path, database_url: str) -> None:
    running = start_server(tmp_path, database_url, api={"watch_bookmark_seconds": 0.2})
    try:
        with running.client() as api:
            before = api.post(CONFIGMAPS, json=configmap("a")).json()
            listing = api.get(CONFIGMAPS).json()
            assert int(listing["metadata"]["resourceVersion"]) >= rv(before)
            watch = WatchReader(running, CONFIGMAPS, resourceVersion=listing["metadata"]["resourceVersion"])
            assert (watch.status_code, watch.content_type) == (200, "application/json")
            added = api.post(CONFIGMAPS, json=configmap("b")).json()
            modified = api.put(f"{CONFIGMAPS}/a", json=configmap("a", k="changed")).json()
            assert api.delete(f"{CONFIGMAPS}/b").status_code == 200
            events = watch.take(3)
            watch.close()
    finally:
        running.process.stop()
    assert summary(events) == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert [e["object"] for e in events[:2]] == [added, modified]
    revisions = [rv(e["object"]) for e in events]
    assert revisions == sorted(revisions) and revisions[0] > rv(before)
    assert events[2]["object"]["data"] == added["data"]  # the last state, at the revision of the deletion


def test_a_watch_without_resource_version_starts_with_the_objects_now(server: RunningServer) -> None:
    with server.client() as api:
        api.post(CONFIGMAPS, json=configmap("a"))
        api.post("/api/v1/namespaces/other/configmaps", json={**configmap("x"), "metadata": {"name": "x"}})
        watch = WatchReader(server, CONFIGMAPS)
        assert summary(watch.take(1)) == [("ADDED", "a")]
        api.post(CONFIGMAPS, json=configmap("b"))
        assert summary(watch.take(1)) == [("ADDED", "b")]
        watch.close()
        everywhere = WatchReader(server, "/api/v1/configmaps", resourceVersion="0")
        assert sorted(summary(everywhere.take(3))) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "x")]
        everywhere.close()


def test_label_selector_sends_objects_entering_and_leaving_it(server: RunningServer) -> None:
    with server.client() as api:
        start = api.get(CONFIGMAPS).json()["metadata"]["resourceVersion"]
        watch = WatchReader(server, CONFIGMAPS, resourceVersion=start, labelSelector="app=web")
        api.post(CONFIGMAPS, json=configmap("web", {"app": "web"}))
        api.post(CONFIGMAPS, json=configmap("db", {"app": "db"}))
        api.put(f"{CONFIGMAPS}/web", json=configmap("web", {"app": "web"}, k="2"))
        api.put(f"{CONFIGMAPS}/web", json=configmap("web", {"app": "db"}, k="2"))
        api.put(f"{CONFIGMAPS}/db", json=configmap("db", {"app": "web"}))
        api.put(f"{CONFIGMAPS}/db", json=configmap("db", {"app": "db", "tier": "x"}))
        events = watch.take(5)
        watch.close()
    assert summary(events) == [
        ("ADDED", "web"),
        ("MODIFIED", "web"),
        ("DELETED", "web"),  # left the selection
        ("ADDED", "db"),  # entered it
        ("DELETED", "db"),
    ]


def test_one_object_by_field_selector_and_by_the_legacy_paths(server: RunningServer) -> None:
    with server.client() as api:
        start = api.get(CONFIGMAPS).json()["metadata"]["resourceVersion"]
        by_field = WatchReader(server, CONFIGMAPS, resourceVersion=start, fieldSelector="metadata.name=a")
        by_path = WatchReader(server, f"{CONFIGMAPS}/a", resourceVersion=start)
        legacy = WatchReader(server, "/api/v1/watch/namespaces/default/configmaps/a", resourceVersion=start)
        for name in ("b", "a"):
            api.post(CONFIGMAPS, json=configmap(name))
        for watch in (by_field, by_path, legacy):
            assert summary(watch.take(1)) == [("ADDED", "a")]
            watch.close()
        for selector in ("spec.x=1", "metadata.namespace=other", "metadata.name!=a"):
            refused = api.get(CONFIGMAPS, params={"watch": "1", "fieldSelector": selector})
            assert (refused.status_code, refused.json()["reason"]) == (400, "BadRequest"), selector


def test_a_resource_version_older_than_the_log_is_410_expired(server: RunningServer) -> None:
    with server.client() as api:
        first = api.post(CONFIGMAPS, json=configmap("a")).json()
        api.post(CONFIGMAPS, json=configmap("b"))
        with server.process.api_context.uow() as session:  # what the pruner does once the window passed
            changefeed.prune(session, datetime.now(UTC) + timedelta(hours=1), limit=100)
        watch = WatchReader(server, CONFIGMAPS, resourceVersion=str(rv(first) - 1))
        events = watch.rest()
        latest = api.get(CONFIGMAPS).json()["metadata"]["resourceVersion"]
        assert (
            summary(WatchReader(server, CONFIGMAPS, resourceVersion=latest, timeoutSeconds="1").rest()) == []
        )
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")


def test_bookmarks_and_the_end_of_the_initial_events(server: RunningServer) -> None:
    with server.client() as api:
        api.post(CONFIGMAPS, json=configmap("a"))
        written = api.post(CONFIGMAPS, json=configmap("b")).json()
        params = {
            "sendInitialEvents": "true",
            "allowWatchBookmarks": "true",
            "resourceVersionMatch": "NotOlderThan",
        }
        watch = WatchReader(server, CONFIGMAPS, **params)
        events = watch.take(4, keep=lambda e: True)
        watch.close()
    assert summary(events[:2]) == [("ADDED", "a"), ("ADDED", "b")]
    end = events[2]["object"]
    assert events[2]["type"] == "BOOKMARK"
    assert end["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert events[3]["type"] == "BOOKMARK" and rv(events[3]["object"]) >= rv(written)


def test_table_events_for_kubectl(server: RunningServer) -> None:
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    with server.client() as api:
        api.post(CONFIGMAPS, json=configmap("a"))
        watch = WatchReader(server, CONFIGMAPS, headers={"Accept": accept})
        (event,) = watch.take(1)
        watch.close()
    table = event["object"]
    assert (event["type"], table["kind"], len(table["rows"])) == ("ADDED", "Table", 1)
    assert table["rows"][0]["cells"][0] == "a"


def test_the_stream_ends_on_timeout_when_the_client_leaves_and_when_the_server_stops(
    server: RunningServer,
) -> None:
    with server.client() as api:
        api.post(CONFIGMAPS, json=configmap("a"))
    assert summary(WatchReader(server, CONFIGMAPS, timeoutSeconds="1").rest()) == [("ADDED", "a")]
    hub = server.process._server.config.app.state.watch_hub
    leaving = WatchReader(server, CONFIGMAPS)
    wait_until(lambda: hub.subscribers == 1, "the watch to subscribe")
    leaving.close()
    wait_until(lambda: hub.subscribers == 0, "the watch to be dropped once its client left")
    staying = WatchReader(server, CONFIGMAPS)
    assert summary(staying.take(1)) == [("ADDED", "a")]
    server.process.stop()  # joins the server thread: a watch that held the graceful shutdown would hang it
    assert staying.rest() == []
    assert not server.process._thread.is_alive()


def test_watch_is_authorized_like_a_list(server: RunningServer) -> None:
    agent = server.create_token("agent", "m1")
    viewer = server.create_token("viewer")
    own = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-m1/works"
    watch = WatchReader(server, own, token=agent, timeoutSeconds="1")
    assert watch.status_code == 200 and watch.rest() == []
    with server.client(agent) as api:
        for path in ("/apis/work.karmada.io/v1alpha1/works", "/apis/work.karmada.io/v1alpha1/watch/works"):
            assert api.get(path, params={"watch": "1"}).status_code == 403
    with server.client(viewer) as api:
        assert api.get("/api/v1/namespaces/default/secrets", params={"watch": "1"}).status_code == 403
        assert api.get(CONFIGMAPS, params={"watch": "1", "timeoutSeconds": "1"}).status_code == 200


def test_with_no_watch_open_the_hub_polls_seldom_and_a_list_still_reports_the_latest_write(
    server: RunningServer,
) -> None:
    """An idle API process does not read the change log every ``watch_poll_seconds`` just because a list
    once started the hub; a list reads it up to now first, so list-then-watch still misses nothing."""
    with server.client() as api:
        api.get(CONFIGMAPS)  # starts the hub
        hub = server.process._server.config.app.state.watch_hub
        polls = hub.polls
        written = api.post(CONFIGMAPS, json=configmap("a")).json()
        time.sleep(1.0)  # five poll intervals (0.2 s), a fifth of the idle one (5 s)
        assert hub.polls - polls <= 1
        listing = api.get(CONFIGMAPS).json()
        assert int(listing["metadata"]["resourceVersion"]) >= rv(written)
        watch = WatchReader(server, CONFIGMAPS, resourceVersion=listing["metadata"]["resourceVersion"])
        added = api.post(CONFIGMAPS, json=configmap("b")).json()
        assert [e["object"] for e in watch.take(1)] == [added]  # the new watch woke the hub
        watch.close()
