"""End to end over real sockets: the API server with every controller (short real intervals), three
simulated members joined through the join endpoint, and a Pull-mode member served by a running agent.

Push: a Deployment with a Divided static-weight 1:2 policy → Works in two execution namespaces → the
members run Deployments of 1 and 2 replicas that become ready; replicas 6 → 2 and 4; the template deleted
→ the member objects and the Works are gone.
Pull: the same flow for a cluster only its agent can reach: Work applied by the agent, status reported
back through the API, objects removed when the template goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from federation.members.agent import Agent, AgentConfig
from federation.members.client import KubernetesMemberClient
from federation.sim import RunningSimulator, SimulatorConfig, run_simulator_in_thread
from tests.conftest import RunningServer, start_server
from tests.members.helpers import deployment, wait_for

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-{}/works"
FAST = {
    "status_interval_seconds": 0.5,
    "failure_threshold_seconds": 1,
    "success_threshold_seconds": 1,
    "lease_duration_seconds": 4,
    "monitor_grace_period_seconds": 4,
    "scheduler_interval_seconds": 0.2,
    "execution_interval_seconds": 0.2,
    "work_sync_interval_seconds": 0.2,
    "detector_interval_seconds": 0.2,
    "retry_backoff_initial_seconds": 0.2,
    "retry_backoff_max_seconds": 1,
}
DEADLINE = 30.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    running = start_server(tmp_path, controllers=FAST)
    try:
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def members() -> Iterator[dict[str, RunningSimulator]]:
    sims = {
        name: run_simulator_in_thread(SimulatorConfig(name=name, nodes=2, node_cpu="4", ready_delay=0.2))
        for name in ("member1", "member2", "member3", "edge")
    }
    try:
        yield sims
    finally:
        for sim in sims.values():
            sim.stop()


def member_replicas(sim: RunningSimulator, name: str) -> tuple[int, int] | None:
    """(spec.replicas, status.readyReplicas) of a Deployment on a member, None when absent."""
    client = KubernetesMemberClient(sim.name, sim.kubeconfig)
    try:
        found = client.get("apps/v1", "Deployment", "default", name)
    finally:
        client.close()
    if found is None:
        return None
    return int(found["spec"]["replicas"]), int((found.get("status") or {}).get("readyReplicas") or 0)


def join(http: httpx.Client, name: str, sim: RunningSimulator | None) -> None:
    body: dict[str, Any] = {"name": name, "syncMode": "Pull" if sim is None else "Push"}
    if sim is not None:
        body["kubeconfig"] = sim.kubeconfig
    answer = http.post("/federation/v1/clusters/join", json=body)
    assert answer.status_code == 201, answer.text


def put(http: httpx.Client, path: str, body: dict[str, Any]) -> None:
    answer = http.put(f"{path}/{body['metadata']['name']}", json=body)
    assert answer.status_code in (200, 201), answer.text


def policy(
    name: str, target: str, clusters: list[str], weights: dict[str, int] | None = None
) -> dict[str, Any]:
    scheduling: dict[str, Any] = {"replicaSchedulingType": "Duplicated"}
    if weights:
        static = [{"targetCluster": {"clusterNames": [c]}, "weight": w} for c, w in weights.items()]
        scheduling = {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": static},
        }
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": target}],
            "placement": {"clusterAffinity": {"clusterNames": clusters}, "replicaScheduling": scheduling},
        },
    }


def scale(http: httpx.Client, name: str, replicas: int) -> None:
    """Read-modify-write with the resourceVersion, retried on Conflict: the status controllers write the
    template's status concurrently, as a real client would experience."""

    def attempt() -> bool:
        template = http.get(f"{DEPLOYMENTS}/{name}").json()
        template["spec"]["replicas"] = replicas
        answer = http.put(f"{DEPLOYMENTS}/{name}", json=template)
        assert answer.status_code in (200, 409), answer.text
        return answer.status_code == 200

    wait_for(attempt, timeout=DEADLINE, interval=0.05, what=f"scaling {name} to {replicas}")


def work_names(http: httpx.Client, cluster: str) -> list[str]:
    return [w["metadata"]["name"] for w in http.get(WORKS.format(cluster)).json()["items"]]


def wait_members(sims: dict[str, RunningSimulator], name: str, want: dict[str, int | None]) -> None:
    """Until each member holds the Deployment with its share of replicas, all ready (None: absent)."""

    def reached() -> bool:
        for cluster, replicas in want.items():
            seen = member_replicas(sims[cluster], name)
            if seen != (None if replicas is None else (replicas, replicas)):
                return False
        return True

    wait_for(reached, timeout=DEADLINE, interval=0.2, what=f"{name} on the members to be {want}")


def test_divided_static_weight_follows_the_template_on_three_members(
    server: RunningServer, members: dict[str, RunningSimulator]
) -> None:
    with server.client() as http:
        for name in ("member1", "member2", "member3"):
            join(http, name, members[name])
        put(http, POLICIES, policy("web", "web", ["member1", "member2"], {"member1": 1, "member2": 2}))
        template = deployment("web", 3)
        put(http, DEPLOYMENTS, template)

        wait_members(members, "web", {"member1": 1, "member2": 2, "member3": None})
        assert len(work_names(http, "member1")) == 1 and len(work_names(http, "member2")) == 1
        assert work_names(http, "member3") == []

        scale(http, "web", 6)
        wait_members(members, "web", {"member1": 2, "member2": 4})

        assert http.delete(f"{DEPLOYMENTS}/web").status_code == 200
        wait_members(members, "web", {"member1": None, "member2": None})
        wait_for(
            lambda: not work_names(http, "member1") and not work_names(http, "member2"),
            timeout=DEADLINE,
            what="the Works to be gone",
        )


@pytest.fixture
def agent_factory(server: RunningServer) -> Iterator[Callable[[RunningSimulator], Agent]]:
    agents: list[Agent] = []

    def start(sim: RunningSimulator) -> Agent:
        config = AgentConfig(
            cluster=sim.name,
            server=server.url,
            token=server.create_token("agent", sim.name),
            kubeconfig=sim.kubeconfig,
            ca_pem=server.process.tls.ca_pem,  # the server's HTTPS CA, as its kubeconfig carries it
            lease_duration_seconds=4,
            sync_interval_seconds=0.2,
            status_interval_seconds=1,
        )
        agents.append(Agent(config).run_in_thread())
        return agents[-1]

    yield start
    for agent in agents:
        agent.stop()


def ready(http: httpx.Client, cluster: str) -> bool:
    conditions = (
        http.get(f"/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}").json().get("status") or {}
    ).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def manifest_health(http: httpx.Client, cluster: str) -> dict[str, Any] | None:
    items = http.get(WORKS.format(cluster)).json()["items"]
    statuses = [s for w in items for s in (w.get("status") or {}).get("manifestStatuses") or []]
    ready = (
        statuses
        and statuses[0].get("health") == "Healthy"
        and statuses[0]["status"].get("readyReplicas") == 2
    )
    return statuses[0] if ready else None


def test_a_pull_cluster_is_served_by_its_agent(
    server: RunningServer,
    members: dict[str, RunningSimulator],
    agent_factory: Callable[[RunningSimulator], Agent],
) -> None:
    edge = members["edge"]
    with server.client() as http:
        join(http, "edge", None)
        agent_factory(edge)
        wait_for(lambda: ready(http, "edge"), timeout=DEADLINE, what="the Pull cluster to turn Ready")

        put(http, POLICIES, policy("api", "api", ["edge"]))
        put(http, DEPLOYMENTS, deployment("api", 2))
        wait_members(members, "api", {"edge": 2})
        entry = wait_for(
            lambda: manifest_health(http, "edge"), timeout=DEADLINE, what="the agent's Work status"
        )
        assert entry["identifier"]["kind"] == "Deployment" and entry["status"]["readyReplicas"] == 2
        binding = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/api-deployment"
        aggregated = wait_for(
            lambda: (http.get(binding).json().get("status") or {}).get("aggregatedStatus"),
            timeout=DEADLINE,
            what="the binding to aggregate the agent's status",
        )
        assert aggregated[0]["clusterName"] == "edge" and aggregated[0]["applied"] is True

        def template_caught_up() -> bool:  # `federation get deploy` shows the fleet-wide truth
            template = http.get(f"{DEPLOYMENTS}/api").json()
            status = template.get("status") or {}
            return (
                status.get("readyReplicas") == 2
                and status.get("observedGeneration") == template["metadata"]["generation"]
            )

        wait_for(
            template_caught_up, timeout=DEADLINE, what="the template status to aggregate the agent's report"
        )
        summary = http.get("/apis/cluster.karmada.io/v1alpha1/clusters/edge").json()["status"][
            "resourceSummary"
        ]
        assert summary["allocatable"]["cpu"] == "8"

        assert http.delete(f"{DEPLOYMENTS}/api").status_code == 200
        wait_members(members, "api", {"edge": None})
        wait_for(
            lambda: not work_names(http, "edge"), timeout=DEADLINE, what="the agent to finalize the Work"
        )
