"""The scheduler with Kosmos WorkloadPolicies (both backends): a policy written or changed after a binding was
scheduled reschedules the binding; the workloads of one policy share its counts within a cycle and across
cycles, read in one query per cycle; the offline plan predicts what the scheduler writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from federation.store.repository import ObjectRepository
from tests.controllers.test_scheduler import DYNAMIC, Harness, deployment, policy


def workload_policy(quota: dict[str, int], allocation_type: str = "Required") -> dict[str, Any]:
    return {
        "apiVersion": "kosmos.io/v1alpha1",
        "kind": "WorkloadPolicy",
        "metadata": {"name": "split", "namespace": "default"},
        "spec": {
            "topologyKey": "tier",
            "allocationPolicy": [{"name": k, "replicas": v} for k, v in quota.items()],
            "allocationType": allocation_type,
            "allocationMethod": "Fill",
            "labelSelector": {"matchLabels": {"app": "web"}},
        },
    }


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    running.add_cluster("member1", labels={"tier": "edge"})
    running.add_cluster("member2", labels={"tier": "core"})
    yield running
    running.close()


def test_policy_created_later_then_changed_reschedules(harness: Harness) -> None:
    harness.create(deployment("web", 4))
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}, ["web"]))
    harness.run()
    before = harness.placement("web-deployment")
    assert sum(before.values()) == 4

    harness.create(workload_policy({"edge": 1, "core": 3}))
    harness.run()
    assert harness.placement("web-deployment") == {"member1": 1, "member2": 3}
    explanation = harness.binding("web-deployment")["status"]["schedulingExplanation"]
    assert explanation["trigger"] == "WorkloadPolicyChanged"

    harness.replace(workload_policy({"edge": 3, "core": 1}))
    harness.run()
    assert harness.placement("web-deployment") == {"member1": 3, "member2": 1}

    # Nothing changed: the binding is not scheduled again.
    decisions = len(harness.decisions("web-deployment"))
    harness.run()
    assert len(harness.decisions("web-deployment")) == decisions


def team(name: str, replicas: int) -> dict[str, Any]:
    """A Deployment whose pod template (only) carries ``team: web``."""
    template = deployment(name, replicas)
    template["spec"]["template"]["metadata"]["labels"]["team"] = "web"
    return template


def shared_policy() -> dict[str, Any]:
    shared = workload_policy({"edge": 1, "core": 3})
    shared["spec"]["labelSelector"] = {"matchLabels": {"team": "web"}}
    return shared


def test_workloads_of_one_policy_share_its_counts_in_one_cycle_and_later(harness: Harness) -> None:
    harness.add_cluster("member3", labels={"tier": "core"})
    harness.create(shared_policy())
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}))
    for name in ("a", "b"):
        harness.create(team(name, 2))
    harness.run()  # one cycle decides both, in binding order
    assert harness.placement("a-deployment") == {"member1": 1, "member2": 1}
    assert harness.placement("b-deployment") == {"member3": 2}  # Fill: the roomier core cluster
    harness.create(team("c", 2))
    harness.run()  # a later cycle reads where a and b run
    assert harness.placement("c-deployment") == {}
    condition = harness.condition("c-deployment")
    assert condition["reason"] == "Success" and "(3 held by other workloads)" in condition["message"]
    totals = {"edge": 0, "core": 0}
    tier = {"member1": "edge", "member2": "core", "member3": "core"}
    for name in ("a", "b", "c"):
        for cluster, count in harness.placement(f"{name}-deployment").items():
            totals[tier[cluster]] += count
    assert totals == {"edge": 1, "core": 3}


def test_plan_of_several_workloads_matches_the_scheduler(harness: Harness) -> None:
    from federation.scheduling.offline import plan_manifests
    from federation.store.repository import ObjectRepository

    harness.create(shared_policy())
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}))
    templates = [team("a", 3), team("b", 2)]
    for template in templates:
        harness.create(template)
    with harness.uow() as session:
        stored = [ObjectRepository(session, t["kind"], t["apiVersion"]).get("default", t["metadata"]["name"])
                  for t in templates]  # fmt: skip
        objects = [ObjectRepository(session, kind, version).get("default", name) for kind, version, name in (
            ("PropagationPolicy", "policy.karmada.io/v1alpha1", "web"), ("WorkloadPolicy", "kosmos.io/v1alpha1", "split"))]  # fmt: skip
        clusters, _ = ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").list()
    planned = plan_manifests([*stored, *objects], clusters, now=harness.clock.now())  # type: ignore[list-item]
    harness.run()
    for binding in planned:
        written = harness.binding(binding["metadata"]["name"])
        assert binding["spec"] == written["spec"]
        assert binding["metadata"]["annotations"] == written["metadata"]["annotations"]
    assert [sum(c["replicas"] for c in b["spec"]["clusters"]) for b in planned] == [3, 1]


def test_the_counts_cost_one_read_per_cycle(harness: Harness) -> None:
    from tests.store.support import count_statements

    harness.create(shared_policy())
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}))
    for name in ("a", "b", "c", "d"):
        harness.create(team(name, 1))
    harness.detector.reconcile()
    with count_statements(harness.engine) as log:
        harness.scheduler.reconcile()
    joins = [
        s
        for s in log.statements
        if s.lstrip().upper().startswith("SELECT") and "JOIN binding_target_clusters" in s
    ]
    assert len(joins) == 1, "\n".join(log.statements)


def test_the_kosmos_article_deployment_gets_its_policy(harness: Harness) -> None:
    """The article's Deployment carries its labels only in the pod template, bound by ``workload-policy/kosmos.io``."""
    article = deployment("floater", 6)
    article["metadata"]["labels"] = {}
    article["spec"]["template"]["metadata"]["labels"]["workload-policy/kosmos.io"] = "split"
    named = workload_policy({"edge": 1, "core": 3})
    named["spec"]["labelSelector"] = {"matchLabels": {"app": "floater"}}
    harness.create(named)
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}))
    harness.create(article)
    harness.run()
    assert harness.placement("floater-deployment") == {"member1": 1, "member2": 3}
    assert "4/6 replicas placed, 2 unplaced" in harness.condition("floater-deployment")["message"]


def test_quota_freed_by_one_workload_goes_to_the_one_left_short(harness: Harness) -> None:
    """Kosmos' pods beyond a quota stay Pending and are scheduled once the quota frees up; here the
    binding the counts left short is queued again when another workload under the policy gives replicas
    back, and takes them (trigger ``WorkloadPolicyQuotaShort``)."""
    harness.create(shared_policy())
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}))
    harness.create(team("a", 4))
    harness.run()
    assert harness.placement("a-deployment") == {"member1": 1, "member2": 3}
    harness.create(team("b", 2))
    harness.run()
    assert harness.placement("b-deployment") == {}  # every count is held by a
    decisions = len(harness.decisions("b-deployment"))
    harness.run()  # nothing freed: b is not scheduled again
    assert len(harness.decisions("b-deployment")) == decisions

    harness.replace(team("a", 2))  # a gives two replicas back
    harness.run()  # a's decision frees quota and queues b
    harness.run()  # b takes what a freed
    assert sum(harness.placement("a-deployment").values()) == 2
    assert sum(harness.placement("b-deployment").values()) == 2
    assert harness.binding("b-deployment")["status"]["schedulingExplanation"]["trigger"] == (
        "WorkloadPolicyQuotaShort"
    )
    totals = {"edge": 0, "core": 0}
    tier = {"member1": "edge", "member2": "core"}
    for name in ("a", "b"):
        for cluster, count in harness.placement(f"{name}-deployment").items():
            totals[tier[cluster]] += count
    assert totals == {"edge": 1, "core": 3}


def test_quota_of_a_deleted_workload_goes_to_the_one_left_short(harness: Harness) -> None:
    harness.create(shared_policy())
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}))
    harness.create(team("a", 4))
    harness.run()
    harness.create(team("b", 2))
    harness.run()
    assert harness.placement("b-deployment") == {}
    with harness.uow() as session:  # the template goes, and its binding with it
        ObjectRepository(session, "Deployment", "apps/v1").delete("default", "a")
    harness.run()
    assert sum(harness.placement("b-deployment").values()) == 2
