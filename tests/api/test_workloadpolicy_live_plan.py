"""The live plan (``POST /federation/v1/plan``'s planner) and the scheduler agree on WorkloadPolicy counts shared
across workloads: replicas the scheduler already placed for other workloads of the policy count in the plan
exactly as they count when the scheduler decides the planned workload. Both backends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from federation.api.plan import plan_live
from federation.scheduling.planner import stored_status
from federation.settings import Settings
from federation.store.repository import ObjectRepository
from tests.controllers.test_scheduler import DYNAMIC, Harness, deployment, policy

ROLE = "topology.kosmos.io/role"


def team_web(name: str, replicas: int) -> dict[str, Any]:
    """A Deployment whose pods carry ``team: web`` (the pod template's label, what Kosmos selects)."""
    template = deployment(name, replicas)
    template["spec"]["template"]["metadata"]["labels"]["team"] = "web"
    return template


WORKLOAD_POLICY = {
    "apiVersion": "kosmos.io/v1alpha1", "kind": "WorkloadPolicy",
    "metadata": {"name": "split", "namespace": "default"},
    "spec": {"topologyKey": ROLE, "labelSelector": {"matchLabels": {"team": "web"}},
             "allocationPolicy": [{"name": "member", "replicas": 1}, {"name": "host", "replicas": 3}],
             "allocationType": "Required", "allocationMethod": "Fill"},
}  # fmt: skip


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    running.add_cluster("member1", labels={ROLE: "member"})
    running.add_cluster("host1", labels={ROLE: "host"})
    running.add_cluster("host2", labels={ROLE: "host"})
    running.create(WORKLOAD_POLICY)
    running.create(policy("all", {"replicaScheduling": DYNAMIC}))
    yield running
    running.close()


def planned_live(harness: Harness, template: dict[str, Any]) -> dict[str, Any]:
    answer = plan_live(harness.uow, Settings(), [template], harness.clock.now())
    [binding] = answer["items"]
    return dict(binding)


def placed(binding: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c.get("replicas", 0) for c in binding["spec"].get("clusters") or []}


def test_live_plan_counts_stored_placements_as_the_scheduler_does(harness: Harness) -> None:
    expected = {"a": {"member1": 1, "host1": 1}, "b": {"host1": 2}, "c": {}}
    for name in ("a", "b", "c"):
        harness.create(team_web(name, 2))
        with harness.uow() as session:  # the template as stored (its uid is the division's tie-break input)
            template = ObjectRepository(session, "Deployment", "apps/v1").get("default", name)
        assert template is not None
        planned = planned_live(harness, template)  # before the detector and scheduler see it
        harness.run()
        stored = harness.binding(f"{name}-deployment")
        assert placed(stored) == expected[name], name
        assert planned["spec"] == stored["spec"], name
        assert stored_status(planned["status"]) == stored["status"], name
        assert planned["metadata"]["annotations"] == stored["metadata"]["annotations"], name
    message = harness.condition("c-deployment")["message"]
    assert message.endswith(
        "0/2 replicas placed, 2 unplaced: WorkloadPolicy Required: 2 beyond what the quotas on "
        f"{ROLE} leave (member 1 (1 held by other workloads), host 3 (3 held by other workloads))."
    )
