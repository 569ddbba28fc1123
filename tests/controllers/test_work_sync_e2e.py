"""End to end over real sockets: the API server with every controller under its runner, three simulated
members joined through the API, a Deployment with a Divided static 1:2 policy applied through the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from federation.sim import RunningSimulator, run_simulator_in_thread
from tests.conftest import RunningServer, start_server
from tests.controllers.test_execution_support import member_object, ready
from tests.members.helpers import deployment, make_config, wait_for

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
BINDING = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/nginx-deployment"


def _policy() -> dict[str, Any]:
    weights = [
        {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
        {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2},
    ]
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": weights},
                },
            },
        },
    }


@pytest.fixture
def sims() -> Iterator[list[RunningSimulator]]:
    running = [run_simulator_in_thread(make_config(name=f"member{i}", ready_delay=0.1)) for i in (1, 2, 3)]
    yield running
    for sim in running:
        sim.stop()


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[RunningServer]:
    fast = {
        "status_interval_seconds": 0.5,
        "work_sync_interval_seconds": 0.5,
        "execution_interval_seconds": 0.5,
    }
    running = start_server(tmp_path, database_url, controllers=fast)
    yield running
    running.process.stop()


def _template_ready(client: httpx.Client, replicas: int) -> dict[str, Any] | None:
    status = client.get(f"{DEPLOYMENTS}/nginx").json().get("status") or {}
    return status if status.get("readyReplicas") == replicas else None


def test_divided_deployment_follows_the_template_to_the_members_and_away(
    server: RunningServer, sims: list[RunningSimulator]
) -> None:
    m1, m2, m3 = sims
    with server.client() as client:
        for sim in sims:
            body = {"name": sim.name, "kubeconfig": sim.kubeconfig, "syncMode": "Push"}
            assert client.post("/federation/v1/clusters/join", json=body).status_code == 201
        assert (
            client.post(
                "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", json=_policy()
            ).status_code
            == 201
        )
        assert client.post(DEPLOYMENTS, json=deployment("nginx", 3)).status_code == 201

        wait_for(lambda: ready(m1, "nginx", 1) and ready(m2, "nginx", 2), timeout=30, what="1 and 2 replicas")
        works = client.get("/apis/work.karmada.io/v1alpha1/works").json()["items"]
        assert sorted(w["metadata"]["namespace"] for w in works) == [
            "karmada-es-member1",
            "karmada-es-member2",
        ]
        assert member_object(m3, "Deployment", "nginx") is None
        status = wait_for(lambda: _template_ready(client, 3), timeout=30, what="fleet-wide readyReplicas 3")
        assert status["replicas"] == 3

        template = client.get(f"{DEPLOYMENTS}/nginx").json()
        template["spec"]["replicas"] = 6
        assert client.put(f"{DEPLOYMENTS}/nginx", json=template).status_code == 200
        wait_for(lambda: ready(m1, "nginx", 2) and ready(m2, "nginx", 4), timeout=30, what="2 and 4 replicas")
        wait_for(lambda: _template_ready(client, 6), timeout=30, what="fleet-wide readyReplicas 6")
        binding = client.get(BINDING).json()
        fully = [c for c in binding["status"]["conditions"] if c["type"] == "FullyApplied"]
        assert [c["status"] for c in fully] == ["True"]

        assert client.delete(f"{DEPLOYMENTS}/nginx").status_code == 200
        wait_for(
            lambda: (
                member_object(m1, "Deployment", "nginx") is None
                and member_object(m2, "Deployment", "nginx") is None
            ),
            timeout=30,
            what="member objects gone",
        )
        wait_for(lambda: client.get("/apis/work.karmada.io/v1alpha1/works").json()["items"] == [], timeout=30)
