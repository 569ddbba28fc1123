"""The pull-mode agent against a real API server (HTTP) and a real simulator (HTTPS): apply, status,
unchanged Works, updates, deletions, restarts, the lease and the Cluster status."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from federation.members.agent import Agent
from federation.members.agent_status import HASH_ANNOTATION, MANAGED_LABEL
from federation.sim import RunningSimulator
from tests.members.helpers import wait_for
from tests.members.test_agent_support import (
    ApiServer,
    delete_work,
    deployment_manifest,
    get_work,
    make_agent,
    put_work,
    start_api_server,
    tombstone,
    work,
)

CLUSTER = "edge1"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiServer]:
    running = start_api_server(tmp_path)
    try:
        running.join_pull(CLUSTER)
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def agent_factory(api: ApiServer, sim: RunningSimulator) -> Iterator[Callable[..., Agent]]:
    token = api.token("agent", CLUSTER)
    agents: list[Agent] = []

    def make(**overrides: Any) -> Agent:
        agent = make_agent(api, sim, CLUSTER, token, **overrides)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.stop()


def member_deployment(sim: RunningSimulator, name: str) -> dict[str, Any] | None:
    from federation.members.client import KubernetesMemberClient

    client = KubernetesMemberClient("check", sim.kubeconfig)
    try:
        return client.get("apps/v1", "Deployment", "default", name)
    finally:
        client.close()


def manifest_status(api: ApiServer, name: str) -> dict[str, Any] | None:
    statuses = (get_work(api, CLUSTER, name).get("status") or {}).get("manifestStatuses") or []
    return statuses[0] if statuses else None


def test_applies_a_work_and_reports_its_status(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 2)))
    agent = agent_factory()

    report = agent.run_once()

    assert not report.errors
    applied = member_deployment(sim, "web")
    assert applied is not None and applied["spec"]["replicas"] == 2
    meta = applied["metadata"]
    assert meta["labels"][MANAGED_LABEL] == "true"
    assert meta["annotations"]["work.karmada.io/namespace"] == f"karmada-es-{CLUSTER}"
    assert meta["annotations"]["work.karmada.io/name"] == "web-abc"
    assert meta["annotations"][HASH_ANNOTATION]
    status = get_work(api, CLUSTER, "web-abc")["status"]
    applied_condition = next(c for c in status["conditions"] if c["type"] == "Applied")
    assert applied_condition["status"] == "True" and applied_condition["reason"] == "AppliedSuccessful"
    identifier = status["manifestStatuses"][0]["identifier"]
    assert identifier == {
        "ordinal": 0,
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
        "namespace": "default",
        "name": "web",
    }

    def healthy() -> dict[str, Any] | None:
        agent.run_once()
        entry = manifest_status(api, "web-abc")
        return (
            entry
            if entry and entry["health"] == "Healthy" and entry["status"].get("readyReplicas") == 2
            else None
        )

    entry = wait_for(healthy, timeout=15, interval=0.1, what="the Work to report 2 ready replicas")
    assert entry["status"]["availableReplicas"] == 2


def test_an_unchanged_work_causes_no_writes(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 1)))
    agent = agent_factory()
    agent.run_once()

    def settled() -> bool:
        entry = manifest_status(api, "web-abc")
        return bool(entry and entry["health"] == "Healthy" and entry["status"].get("readyReplicas") == 1)

    wait_for(lambda: agent.run_once() and settled(), timeout=15, interval=0.1, what="a healthy Work")
    before = get_work(api, CLUSTER, "web-abc")["metadata"]["resourceVersion"]
    generation = member_deployment(sim, "web")["metadata"]["generation"]

    report = agent.run_once()

    assert report.applied == [] and report.statuses_written == [] and not report.errors
    assert get_work(api, CLUSTER, "web-abc")["metadata"]["resourceVersion"] == before
    assert member_deployment(sim, "web")["metadata"]["generation"] == generation


def test_a_changed_work_is_reapplied_and_a_deleted_one_removed(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 1)))
    agent = agent_factory()
    agent.run_once()

    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 3)))
    report = agent.run_once()
    assert [k.name for k in report.applied] == ["web"]
    assert member_deployment(sim, "web")["spec"]["replicas"] == 3

    delete_work(api, CLUSTER, "web-abc")
    report = agent.run_once()
    assert [k.name for k in report.deleted] == ["web"]
    assert member_deployment(sim, "web") is None


def test_an_object_deleted_on_the_member_is_applied_again(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 1)))
    agent = agent_factory()
    agent.run_once()
    agent.member.delete("apps/v1", "Deployment", "default", "web")

    report = agent.run_once()

    assert [k.name for k in report.applied] == ["web"]
    assert member_deployment(sim, "web") is not None


def test_a_restarted_agent_deletes_objects_of_works_removed_while_it_was_down(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 1)))
    put_work(api, work(CLUSTER, "api-xyz", deployment_manifest("api", 1)))
    first = agent_factory()
    first.run_once()
    first.stop()
    delete_work(api, CLUSTER, "api-xyz")

    second = agent_factory()
    report = second.run_once()

    assert [k.name for k in report.deleted] == ["api"]
    assert report.applied == []  # web was recognised by its hash annotation: not rewritten
    assert member_deployment(sim, "api") is None and member_deployment(sim, "web") is not None


def test_objects_it_did_not_apply_are_left_alone(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    agent = agent_factory()
    foreign = deployment_manifest("foreign", 1)
    foreign["metadata"]["labels"][MANAGED_LABEL] = "true"
    foreign["metadata"]["annotations"] = {
        "work.karmada.io/namespace": "karmada-es-other",
        "work.karmada.io/name": "x",
    }
    agent.member.apply(foreign)

    report = agent.run_once()

    assert report.deleted == []
    assert member_deployment(sim, "foreign") is not None


def test_a_suspended_work_is_not_applied(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 1), suspend=True))
    agent = agent_factory()

    agent.run_once()

    assert member_deployment(sim, "web") is None
    conditions = get_work(api, CLUSTER, "web-abc")["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("Dispatching", "False", "SuspendDispatching")
    ]


def test_a_failed_apply_is_reported_in_the_applied_condition(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    broken = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default"}}  # no name
    put_work(api, work(CLUSTER, "broken-abc", deployment_manifest("web", 1), broken))
    agent = agent_factory()

    agent.run_once()

    status = get_work(api, CLUSTER, "broken-abc")["status"]
    applied = next(c for c in status["conditions"] if c["type"] == "Applied")
    assert applied["status"] == "False" and applied["reason"] == "AppliedFailed"
    assert applied["message"].startswith("Failed to apply all manifests (1/2): ")
    assert status["manifestStatuses"][1]["health"] == "Unknown"
    assert "ConfigMap default/: " in applied["message"]


def test_renews_the_lease_and_reports_the_cluster_status(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    agent = agent_factory(lease_duration_seconds=20)

    agent.run_once()

    with api.client() as http:
        lease = http.get(f"/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/{CLUSTER}").json()
        cluster = http.get(f"/apis/cluster.karmada.io/v1alpha1/clusters/{CLUSTER}").json()
    assert lease["spec"]["holderIdentity"] == agent.config.holder
    assert lease["spec"]["leaseDurationSeconds"] == 20 and lease["spec"]["renewTime"]
    status = cluster["status"]
    assert status["kubernetesVersion"] == "v1.32.0"
    assert status["nodeSummary"] == {"totalNum": 3, "readyNum": 3}
    assert status["resourceSummary"]["allocatable"]["cpu"] == "24"
    assert any(e["groupVersion"] == "apps/v1" for e in status["apiEnablements"])
    complete = next(c for c in status["conditions"] if c["type"] == "CompleteAPIEnablements")
    assert complete["status"] == "True"
    assert not agent.report_cluster_status()  # nothing changed on the member: no second write


def test_runs_in_a_thread_until_stopped(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    agent = agent_factory(sync_interval_seconds=0.1)
    agent.run_in_thread()
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 1)))

    wait_for(lambda: member_deployment(sim, "web"), timeout=10, what="the agent to apply the Work")
    wait_for(lambda: manifest_status(api, "web-abc"), timeout=10, what="the Work status")
    agent.stop()
    assert all(not t.is_alive() for t in agent._threads)


def work_exists(api: ApiServer, name: str) -> bool:
    with api.client() as http:
        return (
            http.get(
                f"/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-{CLUSTER}/works/{name}"
            ).status_code
            == 200
        )


def test_a_tombstoned_work_loses_its_objects_and_is_then_removed(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    put_work(api, work(CLUSTER, "web-abc", deployment_manifest("web", 1)))
    agent = agent_factory()
    agent.run_once()
    assert tombstone(api, CLUSTER, "web-abc")["metadata"]["deletionTimestamp"]

    report = agent.run_once()

    assert [k.name for k in report.deleted] == ["web"] and report.finalized == ["web-abc"]
    assert member_deployment(sim, "web") is None
    assert not work_exists(api, "web-abc")


def test_a_preserved_tombstoned_work_leaves_its_objects_unmarked(
    api: ApiServer, sim: RunningSimulator, agent_factory: Callable[..., Agent]
) -> None:
    body = work(CLUSTER, "web-abc", deployment_manifest("web", 1))
    body["spec"]["preserveResourcesOnDeletion"] = True
    put_work(api, body)
    agent = agent_factory()
    agent.run_once()
    tombstone(api, CLUSTER, "web-abc")

    report = agent.run_once()

    assert report.deleted == [] and report.finalized == ["web-abc"] and not work_exists(api, "web-abc")
    kept = member_deployment(sim, "web")
    assert kept is not None
    assert MANAGED_LABEL not in (kept["metadata"].get("labels") or {})
    assert HASH_ANNOTATION not in (kept["metadata"].get("annotations") or {})
    assert agent_factory().run_once().deleted == []  # a restarted agent does not claim it either
    assert member_deployment(sim, "web") is not None
