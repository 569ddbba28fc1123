"""Recorded events over real HTTP at /api/v1 and /apis/events.k8s.io/v1: what the scheduler says about a
binding (counted when it repeats), field selectors as kubectl describe sends them, namespaces, pages."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from federation.store.events import EventEntry, EventRepository, InvolvedObject
from tests.api import manifests as m

CORE = "/api/v1"
NEW = "/apis/events.k8s.io/v1"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"


def poll(probe: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def record(server: Any, entries: list[EventEntry], at: datetime, source: str = "test") -> None:
    with server.process.api_context.uow() as session:
        EventRepository(session).record_many(entries, now=at, source=source)


def test_scheduler_events_at_both_paths_counted_when_repeated(federation_server):
    with federation_server.client() as http:
        assert http.post(DEPLOYMENTS, json=m.DEPLOYMENT).status_code == 201
        assert http.post(POLICIES, json=m.PROPAGATION_POLICY).status_code == 201
        selector = "involvedObject.kind=ResourceBinding,involvedObject.name=nginx-deployment"
        path = f"{CORE}/namespaces/default/events"

        def failed(count: int) -> list[dict[str, Any]]:
            items = http.get(path, params={"fieldSelector": selector}).json()["items"]
            return [e for e in items if e["reason"] == "ScheduleBindingFailed" and e["count"] >= count]

        poll(lambda: failed(1), "the scheduler's ScheduleBindingFailed event (no cluster exists)")
        # A new placement is scheduled again, and fails the same way: the same event, counted.
        policy = http.get(f"{POLICIES}/nginx-propagation").json()
        policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member1"]
        assert http.put(f"{POLICIES}/nginx-propagation", json=policy).status_code == 200
        [event] = poll(lambda: failed(2), "the repeated ScheduleBindingFailed event")
        assert event["type"] == "Warning" and event["source"] == {"component": "scheduler"}
        assert event["involvedObject"]["apiVersion"] == "work.karmada.io/v1alpha2"
        assert event["lastTimestamp"] >= event["firstTimestamp"]
        binding = http.get(
            "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/nginx-deployment"
        )
        assert event["involvedObject"]["uid"] == binding.json()["metadata"]["uid"]

        new = http.get(
            f"{NEW}/namespaces/default/events",
            params={"fieldSelector": selector.replace("involvedObject", "regarding")},
        )
        same = next(e for e in new.json()["items"] if e["metadata"]["name"] == event["metadata"]["name"])
        assert same["apiVersion"] == "events.k8s.io/v1" and same["note"] == event["message"]
        assert same["series"]["count"] >= 2 and same["regarding"]["name"] == "nginx-deployment"
        one = http.get(f"{path}/{event['metadata']['name']}").json()
        assert one["reason"] == "ScheduleBindingFailed"
        assert http.get(f"{CORE}/namespaces/other/events/{event['metadata']['name']}").status_code == 404
        assert http.get(f"{path}/nonsense").status_code == 404


def test_selectors_namespaces_and_pages(federation_server):
    t0 = datetime.now(UTC) - timedelta(minutes=5)
    cluster = InvolvedObject("Cluster", "member1", "", "c-uid")
    work = InvolvedObject("Work", "nginx-abc", "karmada-es-member1", "w-uid")
    record(federation_server, [EventEntry(cluster, "Warning", "ClusterNotReady", "Ready is now False")], t0)
    record(federation_server, [EventEntry(work, "Warning", "SyncFailed", "boom")], t0, "work-sync")
    record(
        federation_server,
        [EventEntry(cluster, "Normal", "ClusterReady", "Ready is now True")],
        t0 + timedelta(minutes=1),
    )
    with federation_server.client() as http:
        # A cluster-scoped object's events are in "default"; kubectl describe looks across namespaces with
        # an empty involvedObject.namespace.
        fields = "involvedObject.name=member1,involvedObject.namespace=,involvedObject.kind=Cluster,involvedObject.uid=c-uid"
        found = http.get(f"{CORE}/events", params={"fieldSelector": fields}).json()["items"]
        assert [e["reason"] for e in found] == ["ClusterNotReady", "ClusterReady"]
        assert {e["metadata"]["namespace"] for e in found} == {"default"}
        in_default = http.get(
            f"{CORE}/namespaces/default/events", params={"fieldSelector": "type!=Normal"}
        ).json()
        assert "ClusterNotReady" in [e["reason"] for e in in_default["items"]]
        assert "SyncFailed" not in [e["reason"] for e in in_default["items"]]
        spaced = http.get(f"{CORE}/namespaces/karmada-es-member1/events").json()["items"]
        assert [(e["reason"], e["source"]["component"]) for e in spaced] == [("SyncFailed", "work-sync")]
        by_name = http.get(
            f"{NEW}/events", params={"fieldSelector": f"metadata.name={found[0]['metadata']['name']}"}
        )
        assert [e["reason"] for e in by_name.json()["items"]] == ["ClusterNotReady"]
        by_version = http.get(
            f"{NEW}/events", params={"fieldSelector": "regarding.apiVersion=cluster.karmada.io/v1alpha1"}
        )
        assert {e["regarding"]["kind"] for e in by_version.json()["items"]} == {"Cluster"}

        names, token = [], None
        while True:
            params = {"limit": 1, **({"continue": token} if token else {})}
            page = http.get(f"{CORE}/events", params=params).json()
            names += [e["metadata"]["name"] for e in page["items"]]
            token = page["metadata"].get("continue")
            if not token:
                break
        assert len(names) == len(set(names)) >= 3

        assert (
            http.get(f"{CORE}/events", params={"fieldSelector": "involvedObject.color=red"}).status_code
            == 400
        )
        assert http.get(f"{CORE}/events", params={"continue": "garbage"}).status_code == 400
        assert http.post(f"{CORE}/namespaces/default/events", json={}).status_code == 405
        assert http.delete(f"{NEW}/namespaces/default/events/x.1").status_code == 405


def test_events_print_as_a_table_and_are_discoverable(federation_server):
    record(
        federation_server,
        [EventEntry(InvolvedObject("Cluster", "m9"), "Normal", "ClusterReady", "up")],
        datetime.now(UTC),
    )
    with federation_server.client() as http:
        table = http.get(
            f"{CORE}/events", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
        ).json()
        names = [c["name"] for c in table["columnDefinitions"]]
        assert names[:4] == ["Last Seen", "Type", "Reason", "Object"]
        assert table["rows"][0]["cells"][3] == "cluster/m9"
        core = {r["name"]: r for r in http.get(CORE).json()["resources"]}
        assert core["events"]["verbs"] == ["get", "list"]
        assert "events.k8s.io" in {g["name"] for g in http.get("/apis").json()["groups"]}
        assert http.get(f"{NEW}").json()["resources"][0]["name"] == "events"
    viewer = federation_server.create_token("viewer")
    with federation_server.client(viewer) as http:
        assert http.get(f"{CORE}/events").status_code == 200
    agent = federation_server.create_token("agent", "member1")
    with federation_server.client(agent) as http:
        assert http.get(f"{CORE}/events").status_code == 403
