"""Watches on the simulator, through the official ``kubernetes`` client (and raw HTTP where the client hides
what is sent): list-then-watch without gaps or duplicates, status changes the simulator computes on read
(readiness, restarts, faults) as MODIFIED events, selector transitions, 410 Expired, bookmarks, and idle
streams that render nothing."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as kconfig
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from federation.sim import RunningSimulator, changes, run_simulator_in_thread
from federation.sim import watch as sim_watch
from federation.sim.runtime import Runtime
from tests.members.helpers import deployment, make_config


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def timed_sim(clock: FakeClock) -> Iterator[Callable[..., RunningSimulator]]:
    """Simulators on the fake ``clock``."""
    running: list[RunningSimulator] = []

    def start(**overrides: Any) -> RunningSimulator:
        sim = run_simulator_in_thread(make_config(**overrides), clock=clock)
        running.append(sim)
        return sim

    yield start
    for sim in running:
        if sim.thread.is_alive():
            sim.stop()


class Events:
    """A watch from the official client, read in a thread: ``next()`` is its next event."""

    def __init__(self, func: Callable[..., Any], **kwargs: Any) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self._watch = watch.Watch()
        kwargs.setdefault("timeout_seconds", 30)
        thread = threading.Thread(target=self._run, args=(func, kwargs), daemon=True)
        thread.start()

    def _run(self, func: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        try:
            for event in self._watch.stream(func, **kwargs):
                self._queue.put(event)
        except Exception as exc:  # handed to the test
            self._queue.put(exc)
        self._queue.put(None)

    def next(self, timeout: float = 10.0) -> dict[str, Any]:
        event = self._queue.get(timeout=timeout)
        if isinstance(event, Exception):
            raise event
        assert event is not None, "the stream ended"
        return event

    def nothing_within(self, seconds: float) -> None:
        with pytest.raises(queue.Empty):
            event = self._queue.get(timeout=seconds)
            pytest.fail(f"unexpected event {event and event.get('type')}: {event}")

    def until_end(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        found = []
        while (event := self._queue.get(timeout=timeout)) is not None:
            if isinstance(event, Exception):
                raise event
            found.append(event)
        return found

    def stop(self) -> None:
        self._watch.stop()


def _api(sim: RunningSimulator) -> k8s.ApiClient:
    return kconfig.new_client_from_config_dict(sim.kubeconfig)


def _raw(sim: RunningSimulator) -> httpx.Client:
    return httpx.Client(
        base_url=sim.url, headers={"Authorization": f"Bearer {sim.token}"}, verify=False, timeout=15
    )


def _raw_events(sim: RunningSimulator, path: str, **params: str) -> list[dict[str, Any]]:
    """Every event of a watch (it must end by itself: ``timeoutSeconds`` or an error)."""
    with _raw(sim) as http, http.stream("GET", path, params={"watch": "true", **params}) as response:
        assert response.status_code == 200, response.read()
        return [json.loads(line) for line in response.iter_lines() if line.strip()]


def _cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


def _seen(event: dict[str, Any]) -> tuple[str, str, str]:
    raw = event["raw_object"]["metadata"]
    return event["type"], raw["name"], raw["resourceVersion"]


def test_list_then_watch_sends_each_later_change_once_in_order(sim: RunningSimulator) -> None:
    core = k8s.CoreV1Api(_api(sim))
    core.create_namespaced_config_map("default", _cm("before"))
    listed = core.list_namespaced_config_map("default").metadata.resource_version

    # Written before the watch opens: a WATCH from the LIST's version must still send each of them.
    a1 = core.create_namespaced_config_map("default", _cm("a", k="1")).metadata.resource_version
    a2 = core.patch_namespaced_config_map("a", "default", {"data": {"k": "2"}}).metadata.resource_version
    core.delete_namespaced_config_map("a", "default")
    b1 = core.create_namespaced_config_map("default", _cm("b")).metadata.resource_version
    backlog = Events(core.list_namespaced_config_map, namespace="default", resource_version=listed)
    first = [backlog.next() for _ in range(4)]
    deleted_rv = first[2]["raw_object"]["metadata"]["resourceVersion"]
    assert [_seen(e) for e in first] == [
        ("ADDED", "a", a1),
        ("MODIFIED", "a", a2),
        ("DELETED", "a", deleted_rv),
        ("ADDED", "b", b1),
    ]
    assert int(a2) < int(deleted_rv) < int(b1)
    assert first[0]["object"].data == {"k": "1"} and first[1]["object"].data == {"k": "2"}
    assert first[2]["object"].data == {"k": "2"}  # DELETED carries the last state

    # And while it is open: each change once, as it happens.
    b2 = core.patch_namespaced_config_map("b", "default", {"data": {"x": "y"}}).metadata.resource_version
    assert _seen(backlog.next()) == ("MODIFIED", "b", b2)
    c1 = core.create_namespaced_config_map("default", _cm("c")).metadata.resource_version
    assert _seen(backlog.next()) == ("ADDED", "c", c1)
    backlog.nothing_within(0.5)
    backlog.stop()


def test_watch_without_version_starts_with_every_object_and_times_out(sim: RunningSimulator) -> None:
    core = k8s.CoreV1Api(_api(sim))
    for name in ("x", "y"):
        core.create_namespaced_config_map("default", _cm(name))
    events = Events(core.list_namespaced_config_map, namespace="default", timeout_seconds=1)
    started = time.monotonic()
    assert [(e["type"], e["object"].metadata.name) for e in events.until_end()] == [
        ("ADDED", "x"),
        ("ADDED", "y"),
    ]
    assert time.monotonic() - started < 5


def test_pods_turning_ready_are_a_write_the_watch_and_a_list_agree_on(
    timed_sim: Callable[..., RunningSimulator], clock: FakeClock
) -> None:
    sim = timed_sim(ready_delay=5)
    apps = k8s.AppsV1Api(_api(sim))
    apps.create_namespaced_deployment("default", deployment("web", 2))
    listed = apps.list_namespaced_deployment("default")
    assert listed.items[0].status.ready_replicas is None
    events = Events(
        apps.list_namespaced_deployment,
        namespace="default",
        resource_version=listed.metadata.resource_version,
    )
    events.nothing_within(0.5)  # nothing changed since the list; the clock has not moved

    clock.advance(5)
    ready = events.next()
    assert ready["type"] == "MODIFIED"
    assert ready["object"].status.ready_replicas == 2
    rv = ready["object"].metadata.resource_version
    assert int(rv) > int(listed.metadata.resource_version)
    again = apps.list_namespaced_deployment("default").items[0]
    assert again.metadata.resource_version == rv and again.status.ready_replicas == 2
    events.nothing_within(0.5)  # Ready once: no more changes

    apps.delete_namespaced_deployment("web", "default")
    gone = events.next()
    assert gone["type"] == "DELETED" and gone["object"].status.ready_replicas == 2
    assert int(gone["object"].metadata.resource_version) > int(rv)


def test_unhealthy_workload_and_its_restarts_are_modified_events(
    timed_sim: Callable[..., RunningSimulator], clock: FakeClock
) -> None:
    sim = timed_sim(ready_delay=1)
    api = _api(sim)
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    apps.create_namespaced_deployment("default", deployment("web", 1))
    clock.advance(1)
    listed = apps.list_namespaced_deployment("default")
    assert listed.items[0].status.ready_replicas == 1
    rv = listed.metadata.resource_version
    deploys = Events(apps.list_namespaced_deployment, namespace="default", resource_version=rv)
    pods = Events(
        core.list_namespaced_pod, namespace="default", label_selector="app=web", resource_version=rv
    )

    with _raw(sim) as http:
        assert http.post("/_sim/faults", json={"unhealthy": ["default/web"]}).status_code == 200
    broken = deploys.next()
    assert broken["type"] == "MODIFIED" and broken["object"].status.ready_replicas is None
    pod = pods.next()
    assert pod["type"] == "MODIFIED"
    restarts = pod["object"].status.container_statuses[0].restart_count
    assert pod["object"].status.container_statuses[0].state.waiting.reason == "CrashLoopBackOff"

    for _ in range(2):  # each restart is a write, of the pod and its workload
        clock.advance(1)
        pod = pods.next()
        assert pod["object"].status.container_statuses[0].restart_count == restarts + 1
        restarts += 1
        assert deploys.next()["type"] == "MODIFIED"

    sim.set_faults(unhealthy=[])
    healed = deploys.next()
    assert healed["object"].status.ready_replicas == 1
    deploys.stop()
    pods.stop()


def test_selector_transitions_are_added_and_deleted(sim: RunningSimulator) -> None:
    core = k8s.CoreV1Api(_api(sim))
    core.create_namespaced_config_map("default", _cm("front", {"tier": "front"}))
    core.create_namespaced_config_map("default", _cm("other"))
    listed = core.list_namespaced_config_map("default", label_selector="tier=front")
    assert [i.metadata.name for i in listed.items] == ["front"]
    fresh = Events(core.list_namespaced_config_map, namespace="default", label_selector="tier=front")
    assert _seen(fresh.next())[:2] == ("ADDED", "front")
    resumed = Events(
        core.list_namespaced_config_map,
        namespace="default",
        label_selector="tier=front",
        resource_version=listed.metadata.resource_version,
    )

    core.patch_namespaced_config_map("other", "default", {"metadata": {"labels": {"tier": "front"}}})
    core.patch_namespaced_config_map("other", "default", {"data": {"k": "v"}})
    core.patch_namespaced_config_map("other", "default", {"metadata": {"labels": {"tier": None}}})
    core.patch_namespaced_config_map("other", "default", {"data": {"k": "w"}})  # not matching: unseen
    for events in (fresh, resumed):
        assert [_seen(events.next())[:2] for _ in range(3)] == [
            ("ADDED", "other"),
            ("MODIFIED", "other"),
            ("DELETED", "other"),
        ]
        events.nothing_within(0.3)
        events.stop()


def test_a_version_older_than_the_log_is_410_expired(
    sim: RunningSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "LOG_LIMIT", 5)
    core = k8s.CoreV1Api(_api(sim))
    listed = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(10):
        core.create_namespaced_config_map("default", _cm(f"cm-{i}"))

    path = "/api/v1/namespaces/default/configmaps"
    (event,) = _raw_events(sim, path, resourceVersion=listed, timeoutSeconds="5")
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["apiVersion"], status["status"]) == ("Status", "v1", "Failure")
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith(f"too old resource version: {listed}")
    with pytest.raises(ApiException) as exc:
        Events(core.list_namespaced_config_map, namespace="default", resource_version=listed).next()
    assert exc.value.status == 410

    # The latest five are still there.
    recent = core.list_namespaced_config_map("default").metadata.resource_version
    last = core.create_namespaced_config_map("default", _cm("last")).metadata.resource_version
    events = _raw_events(sim, path, resourceVersion=recent, timeoutSeconds="1")
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [("ADDED", last)]


def test_a_version_that_is_no_number_is_400(sim: RunningSimulator) -> None:
    with _raw(sim) as http:
        response = http.get("/api/v1/configmaps", params={"watch": "true", "resourceVersion": "abc"})
    assert response.status_code == 400
    assert response.json()["reason"] == "BadRequest"


def test_bookmarks_after_quiet_periods_and_before_the_timeout(
    sim: RunningSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sim_watch, "BOOKMARK_QUIET_SECONDS", 0.4)
    core = k8s.CoreV1Api(_api(sim))
    core.create_namespaced_config_map("default", _cm("x"))
    path = "/apis/apps/v1/namespaces/default/deployments"
    listed = k8s.AppsV1Api(_api(sim)).list_namespaced_deployment("default").metadata.resource_version
    events = _raw_events(sim, path, resourceVersion=listed, timeoutSeconds="2", allowWatchBookmarks="true")
    assert {e["type"] for e in events} == {"BOOKMARK"}
    assert 3 <= len(events) <= 7  # every 0.4 s of quiet, and one at the end
    current = core.list_namespaced_config_map("default").metadata.resource_version
    for event in events:
        assert event["object"] == {
            "kind": "Deployment",
            "apiVersion": "apps/v1",
            "metadata": {"resourceVersion": current},
        }
    assert _raw_events(sim, path, resourceVersion=listed, timeoutSeconds="1") == []


def test_idle_watches_render_nothing(
    timed_sim: Callable[..., RunningSimulator], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = timed_sim(ready_delay=5)
    apps = k8s.AppsV1Api(_api(sim))
    for i in range(5):
        apps.create_namespaced_deployment("default", deployment(f"web-{i}", 3))
    rv = apps.list_namespaced_deployment("default").metadata.resource_version
    watches = [
        Events(apps.list_namespaced_deployment, namespace="default", resource_version=rv) for _ in range(5)
    ]
    watches.append(Events(apps.list_namespaced_deployment, namespace="default"))  # starts with ADDED
    for _ in range(5):
        watches[-1].next()
    time.sleep(0.3)  # every stream is polling

    rendered: list[str] = []
    with_status, render_pod = Runtime._with_status, Runtime.render_pod

    def spy_status(self: Runtime, *args: Any) -> Any:
        rendered.append("workload")
        return with_status(self, *args)

    def spy_pod(self: Runtime, *args: Any) -> Any:
        rendered.append("pod")
        return render_pod(self, *args)

    monkeypatch.setattr(Runtime, "_with_status", spy_status)
    monkeypatch.setattr(Runtime, "render_pod", spy_pod)
    time.sleep(1.0)  # ~10 polls of each of 6 streams
    assert rendered == []

    apps.patch_namespaced_deployment("web-0", "default", {"metadata": {"labels": {"x": "y"}}})
    for events in watches:
        assert events.next()["object"].metadata.name == "web-0"
    assert rendered.count("workload") <= 1 + len(watches)  # the response, and one per stream's event
    for events in watches:
        events.stop()


@pytest.mark.parametrize(
    ("event", "before", "now", "sent"),
    [
        ("ADDED", False, True, "ADDED"),
        ("ADDED", False, False, None),
        ("MODIFIED", True, True, "MODIFIED"),
        ("MODIFIED", True, False, "DELETED"),
        ("MODIFIED", False, True, "ADDED"),
        ("MODIFIED", False, False, None),
        ("DELETED", True, False, "DELETED"),
        ("DELETED", False, False, None),
    ],
)
def test_selector_transition_rule(event: str, before: bool, now: bool, sent: str | None) -> None:
    assert sim_watch.transition(event, before, now) == sent


def test_change_log_reads_past_a_position_and_knows_what_it_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "LOG_LIMIT", 3)
    log = changes.ChangeLog()
    follower = log.follow(("", "configmaps"))
    for rv in range(1, 6):
        log.record(changes.Change(rv, ("", "configmaps"), ("ns", f"c{rv}"), "ADDED", {}, None))
    log.record(changes.Change(6, ("", "pods"), ("ns", "p"), "ADDED", {}, None))
    assert [c.rv for c in log.since(("", "configmaps"), 3) or []] == [4, 5]
    assert log.since(("", "configmaps"), 5) == []
    assert log.since(("", "configmaps"), 2) is not None and log.since(("", "configmaps"), 1) is None
    assert log.since(("", "pods"), 0) is not None  # another type's log is its own
    assert [c.rv for c in follower] == [1, 2, 3, 4, 5]  # a follower misses nothing the log dropped
