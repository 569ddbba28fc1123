"""The live plan endpoint over real HTTP on both backends: plans against stored clusters, policies and
bindings, overlays the posted objects, writes nothing; admin and viewer may call it, agents may not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunningServer

PLAN = "/federation/v1/plan"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]


def start_without_controllers(tmp_path: Path, database_url: str | None = None) -> RunningServer:
    """A real server whose controllers do not run: the stored state stays exactly as the test wrote it."""
    from federation.cli import server
    from federation.settings import load_settings

    settings = load_settings(data_dir=str(tmp_path / "data"), database_url=database_url, api={"port": 0})
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    return RunningServer(process)


def cluster(name: str, pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Push", "apiEndpoint": f"https://{name}.example:6443"},
    }


def cluster_status(pods: int) -> dict[str, Any]:
    return {
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": ""}],
        "apiEnablements": APIS,
        "resourceSummary": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": str(pods)}},
    }


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": replicas},
    }


def policy(weights: tuple[int, int]) -> dict[str, Any]:
    rules = [
        {"targetCluster": {"clusterNames": [f"member{i + 1}"]}, "weight": w} for i, w in enumerate(weights)
    ]
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "weightPreference": {"staticWeightList": rules},
                }
            },
        },
    }


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[RunningServer]:
    running = start_without_controllers(tmp_path, database_url)
    with running.client() as http:
        for name, pods in (("member1", 10), ("member2", 10)):
            created = http.post(CLUSTERS, json=cluster(name, pods))
            assert created.status_code == 201, created.text
            assert http.put(
                f"{CLUSTERS}/{name}/status", json={**cluster(name, pods), "status": cluster_status(pods)}
            ).is_success
        assert http.post(POLICIES, json=policy((1, 1))).status_code == 201
    try:
        yield running
    finally:
        running.process.stop()


def placed(binding: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c.get("replicas", 0) for c in binding["spec"].get("clusters") or []}


def test_live_plan_uses_stored_policies_and_writes_nothing(server: RunningServer) -> None:
    with server.client() as http:
        answer = http.post(PLAN, json={"apiVersion": "v1", "kind": "List", "items": [deployment(4)]})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["kind"] == "List"
        [binding] = body["items"]
        assert binding["metadata"]["name"] == "web-deployment"
        assert placed(binding) == {"member1": 2, "member2": 2}  # the stored 1:1 policy
        assert binding["status"]["conditions"][0]["reason"] == "Success"
        assert http.get(BINDINGS).json()["items"] == []  # nothing was written
        assert http.get("/apis/apps/v1/namespaces/default/deployments/web").status_code == 404
        overlaid = http.post(PLAN, json={"kind": "List", "items": [deployment(3), policy((1, 2))]}).json()
        assert placed(overlaid["items"][0]) == {"member1": 1, "member2": 2}  # the posted policy wins


def test_live_plan_roles_and_bad_bodies(server: RunningServer) -> None:
    viewer = server.create_token("viewer")
    with server.client(viewer) as http:
        assert http.post(PLAN, json={"kind": "List", "items": [deployment(2)]}).status_code == 200
    agent = server.create_token("agent", cluster="member1")
    with server.client(agent) as http:
        denied = http.post(PLAN, json={"kind": "List", "items": []})
        assert denied.status_code == 403 and denied.json()["reason"] == "Forbidden"
    with server.client() as http:
        assert http.post(PLAN, content=b"").status_code == 400
        assert http.post(PLAN, json={"kind": "List", "items": "nope"}).json()["reason"] == "BadRequest"
        bad = policy((1, 1))
        bad["spec"]["placement"]["replicaScheduling"]["replicaSchedulingType"] = "Sideways"
        invalid = http.post(PLAN, json={"kind": "List", "items": [deployment(2), bad]})
        assert invalid.status_code == 400 and "replicaSchedulingType" in invalid.json()["message"]
    import httpx

    assert httpx.post(f"{server.url}{PLAN}", json={"items": []}, verify=server.verify).status_code == 401
