"""Offline planning: manifests + Cluster objects → the bindings detector and scheduler would write."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from federation.scheduling.offline import PlanError, plan_manifests, template_uid

NOW = datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC)
APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]
ROLE = "topology.kosmos.io/role"
DYNAMIC = {
    "replicaSchedulingType": "Divided",
    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
}


def cluster(name: str, pods: int = 110, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"syncMode": "Push"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "apiEnablements": APIS,
            "resourceSummary": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": str(pods)}},
        },
    }


def deployment(
    name: str, replicas: int, labels: dict[str, str] | None = None, uid: str | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {"app": name}}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {"replicas": replicas}}


def policy(placement: dict[str, Any], name: str = "pp") -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": placement,
        },
    }


def workload_policy(allocation_type: str, method: str) -> dict[str, Any]:
    return {
        "apiVersion": "kosmos.io/v1alpha1",
        "kind": "WorkloadPolicy",
        "metadata": {"name": "split"},
        "spec": {
            "topologyKey": ROLE,
            "labelSelector": {"matchLabels": {"app": "web"}},
            "allocationPolicy": [{"name": "member", "replicas": 1}, {"name": "host", "replicas": 3}],
            "allocationType": allocation_type,
            "allocationMethod": method,
        },
    }


def placed(binding: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c.get("replicas", 0) for c in binding["spec"].get("clusters") or []}


def scheduled(binding: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in binding["status"]["conditions"] if c["type"] == "Scheduled")


def test_static_weights_one_to_two() -> None:
    static = {
        "clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                    {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2},
                ]
            },
        },
    }
    [binding] = plan_manifests(
        [deployment("web", 3), policy(static)], [cluster("member1"), cluster("member2")], now=NOW
    )
    assert binding["kind"] == "ResourceBinding"
    assert binding["metadata"]["name"] == "web-deployment" and binding["metadata"]["namespace"] == "default"
    assert binding["spec"]["clusters"] == [
        {"name": "member1", "replicas": 1},
        {"name": "member2", "replicas": 2},
    ]
    assert scheduled(binding)["reason"] == "Success"
    assert binding["status"]["schedulerObservedGeneration"] == binding["metadata"]["generation"] == 2
    assert binding["spec"]["resource"]["uid"] == str(
        uuid.uuid5(uuid.NAMESPACE_URL, "apps/v1/Deployment/default/web")
    )
    assert binding["spec"]["resource"]["uid"] == template_uid(
        {**deployment("web", 3), "metadata": {"name": "web", "namespace": "default"}}
    )


WLP_CLUSTERS = [cluster("member1", labels={ROLE: "member"}), cluster("host1", labels={ROLE: "host"})]


def test_workload_policy_required_fill_reports_unplaced() -> None:
    docs = [deployment("web", 6), policy({"replicaScheduling": DYNAMIC}), workload_policy("Required", "Fill")]
    [binding] = plan_manifests(docs, WLP_CLUSTERS, now=NOW)
    assert placed(binding) == {"host1": 3, "member1": 1}
    condition = scheduled(binding)
    assert condition["reason"] == "Success"
    assert "4/6 replicas placed, 2 unplaced" in condition["message"]
    assert binding["status"]["schedulingExplanation"]["unplaced"] == 2


def test_workload_policy_preferred_balance_places_all() -> None:
    docs = [
        deployment("web", 6),
        policy({"replicaScheduling": DYNAMIC}),
        workload_policy("Preferred", "Balance"),
    ]
    [binding] = plan_manifests(docs, WLP_CLUSTERS, now=NOW)
    got = placed(binding)
    assert sum(got.values()) == 6 and got["member1"] >= 1 and got["host1"] >= 3
    assert scheduled(binding)["message"] == "Binding has been scheduled successfully."


def test_earlier_bindings_capacity_is_assumed() -> None:
    docs = [
        deployment("a", 4),
        deployment("b", 4),
        deployment("c", 4),
        policy({"replicaScheduling": DYNAMIC}),
    ]
    planned = plan_manifests(docs, [cluster("m1", pods=5), cluster("m2", pods=5)], now=NOW)
    assert [sum(placed(b).values()) for b in planned[:2]] == [4, 4]
    assert scheduled(planned[2])["reason"] == "Unschedulable"
    totals = {c: sum(placed(b).get(c, 0) for b in planned) for c in ("m1", "m2")}
    assert max(totals.values()) <= 5


def test_existing_binding_is_the_previous_placement() -> None:
    docs = [deployment("web", 4, uid="given-uid"), policy({"replicaScheduling": DYNAMIC})]
    clusters = [cluster("m1"), cluster("m2")]
    [first] = plan_manifests(docs, clusters, now=NOW)
    assert first["spec"]["resource"]["uid"] == "given-uid"
    first["metadata"].update(uid="rb-uid", resourceVersion="7")
    [steady] = plan_manifests([*docs, first], clusters, now=NOW.replace(hour=9))
    assert steady == {**first, "status": {**first["status"], "schedulerObservedGeneration": 2}}
    bumped = copy.deepcopy(first)
    bumped["spec"]["rescheduleTriggeredAt"] = "2026-05-01T08:30:00Z"
    [fresh] = plan_manifests(
        [docs[0], bumped], clusters, now=NOW.replace(hour=9)
    )  # no policy: planned as given
    assert fresh["status"]["schedulingExplanation"]["trigger"] == "RescheduleTriggered"
    assert fresh["status"]["lastScheduledTime"] == "2026-05-01T09:00:00Z"
    assert fresh["metadata"]["uid"] == "rb-uid"


def test_no_cluster_fit_message() -> None:
    tainted = cluster("m1")
    tainted["spec"]["taints"] = [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}]
    docs = [deployment("web", 2), policy({"clusterAffinity": {"clusterNames": ["m1", "m2"]}})]
    [binding] = plan_manifests(docs, [tainted, cluster("m2", labels={})], now=NOW)
    assert placed(binding) == {"m2": 2}
    [nothing] = plan_manifests(docs, [tainted], now=NOW)
    condition = scheduled(nothing)
    assert condition["reason"] == "NoClusterFit" and nothing["spec"]["clusters"] == []
    assert condition["message"] == (
        "0/1 clusters are available: 1 cluster(s) had untolerated taint {cluster.karmada.io/not-ready: }."
    )


def test_invalid_input_is_one_clear_error() -> None:
    bad = policy({"replicaScheduling": {"replicaSchedulingType": "Sideways"}})
    with pytest.raises(PlanError, match=r"PropagationPolicy 'pp': .*spec.placement.replicaScheduling"):
        plan_manifests([deployment("web", 1), bad], [cluster("m1")], now=NOW)
    with pytest.raises(PlanError, match="only Cluster objects"):
        plan_manifests([deployment("web", 1)], [deployment("x", 1)], now=NOW)
    broken = cluster("m1")
    broken["status"]["resourceSummary"]["allocatable"]["cpu"] = "lots"
    with pytest.raises(PlanError, match="Cluster 'm1'"):
        plan_manifests([deployment("web", 1)], [broken], now=NOW)


def test_templates_no_policy_claims_are_left_out() -> None:
    assert plan_manifests([deployment("web", 1)], [cluster("m1")], now=NOW) == []
