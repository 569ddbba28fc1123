"""Kosmos WorkloadPolicy allocation, resource fit with headroom, score plugins, snapshots and triggers."""

from __future__ import annotations

from datetime import datetime

import pytest

from federation.model.placement import Placement
from federation.model.workloadpolicy import WorkloadPolicy, WorkloadPolicySpec
from federation.scheduling.engine import schedule
from federation.scheduling.estimator import general_max_replicas
from federation.scheduling.snapshot import from_cluster
from federation.scheduling.triggers import needs_scheduling
from federation.scheduling.types import ClusterSnapshot, EngineConfig, Headroom
from federation.scheduling.workloadpolicy import select_policy
from tests.scheduling.sched_factories import DYNAMIC, GIB, make_binding, make_cluster, pods_only

ROLE = "kosmos.io/role"


def policy(kind: str, method: str) -> WorkloadPolicySpec:
    return WorkloadPolicySpec.model_validate({
        "topologyKey": ROLE, "labelSelector": {"matchLabels": {"app": "web"}},
        "allocationPolicy": [{"name": "member", "replicas": 1}, {"name": "host", "replicas": 3}],
        "allocationType": kind, "allocationMethod": method,
    })  # fmt: skip


def role_clusters(extra: bool = True) -> list[ClusterSnapshot]:
    clusters = [pods_only("member-a", 10, labels={ROLE: "member"}), pods_only("member-b", 10, labels={ROLE: "member"}),
                pods_only("host-a", 10, labels={ROLE: "host"}), pods_only("host-b", 10, labels={ROLE: "host"})]  # fmt: skip
    return clusters + ([pods_only("edge", 10)] if extra else [])


def placed(result: object) -> dict[str, int]:
    return {t.name: t.replicas for t in result.clusters}  # type: ignore[attr-defined]


def test_required_fill_places_only_the_quotas_and_reports_the_rest() -> None:
    result = schedule(make_binding(6, DYNAMIC, workload_policy=policy("Required", "Fill")), role_clusters())
    assert result.succeeded and result.unplaced == 2
    assert placed(result) == {"member-a": 1, "host-a": 3}
    assert "4/6 replicas placed, 2 unplaced" in result.message


def test_preferred_balance_places_everything_quotas_first() -> None:
    result = schedule(
        make_binding(6, DYNAMIC, workload_policy=policy("Preferred", "Balance")), role_clusters()
    )
    assert result.succeeded and result.unplaced == 0
    got = placed(result)
    assert got["member-a"] + got.get("member-b", 0) == 1 and got["host-a"] + got["host-b"] == 3
    assert abs(got["host-a"] - got["host-b"]) == 1 and got["edge"] == 2
    without_edge = placed(schedule(make_binding(6, DYNAMIC, workload_policy=policy("Preferred", "Balance")),
                                   role_clusters(extra=False)))  # fmt: skip
    assert sum(without_edge.values()) == 6


def test_required_respects_capacity_inside_a_value() -> None:
    clusters = [
        pods_only("host-a", 1, labels={ROLE: "host"}),
        pods_only("member-a", 5, labels={ROLE: "member"}),
    ]
    result = schedule(make_binding(4, DYNAMIC, workload_policy=policy("Required", "Fill")), clusters)
    assert placed(result) == {"host-a": 1, "member-a": 1} and result.unplaced == 2


def test_select_policy_by_label_or_selector() -> None:
    def wlp(name: str, app: str) -> WorkloadPolicy:
        return WorkloadPolicy.model_validate({"metadata": {"name": name}, "spec": {
            "topologyKey": ROLE, "labelSelector": {"matchLabels": {"app": app}}, "allocationPolicy": []}})  # fmt: skip

    policies = [wlp("b", "web"), wlp("a", "db")]
    assert select_policy(policies, {"app": "web"}).metadata.name == "b"  # type: ignore[union-attr]
    named = {"app": "web", "workload-policy.kosmos.io": "a"}
    assert select_policy(policies, named).metadata.name == "a"  # type: ignore[union-attr]
    assert select_policy(policies, {"app": "x"}) is None


DISK = {"ephemeral-storage": Headroom(percent=10, floor=250 * GIB)}


def disk_cluster(name: str, used_gib: int) -> ClusterSnapshot:
    return make_cluster(name, allocated={"ephemeral-storage": used_gib * GIB})


def test_headroom_filters_clusters_that_would_eat_into_it() -> None:
    config = EngineConfig(headroom=DISK)
    binding = make_binding(2, DYNAMIC, resource_request={"ephemeral-storage": 10 * GIB, "cpu": 100})
    result = schedule(binding, [disk_cluster("full", 770), disk_cluster("roomy", 100)], config)
    assert placed(result) == {"roomy": 2}
    assert (
        result.explanation["clusters"]["full"]["filter"]["reason"]
        == "cluster(s) had insufficient ephemeral-storage"
    )
    # Without headroom the same cluster fits 25 more replicas of 10Gi.
    assert general_max_replicas(disk_cluster("full", 770), {"ephemeral-storage": 10 * GIB}) == 25
    assert general_max_replicas(disk_cluster("full", 770), {"ephemeral-storage": 10 * GIB}, DISK) == 0


def test_headroom_percent_beats_floor_on_big_disks() -> None:
    assert Headroom(percent=10, floor=250 * GIB).reserve(4096 * GIB) == -(-4096 * GIB // 10)
    assert Headroom(percent=10, floor=250 * GIB).reserve(1024 * GIB) == 250 * GIB


def test_extended_resources_and_missing_resources() -> None:
    gpu = make_cluster("gpu", allocatable={"cpu": 8000, "pods": 10, "nvidia.com/gpu": 4})
    assert general_max_replicas(gpu, {"nvidia.com/gpu": 1, "cpu": 1000}) == 4
    assert general_max_replicas(make_cluster("plain"), {"nvidia.com/gpu": 1}) == 0
    assert general_max_replicas(ClusterSnapshot("none"), {"cpu": 1}) == 0
    result = schedule(
        make_binding(3, DYNAMIC, resource_request={"nvidia.com/gpu": 1}), [gpu, make_cluster("plain")]
    )
    assert placed(result) == {"gpu": 3}


def test_weighted_resource_scores_change_the_order() -> None:
    busy = make_cluster("busy", allocated={"cpu": 90_000, "memory": 300 * GIB})
    idle = make_cluster("idle")
    spread = {**DYNAMIC, "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]}
    config = EngineConfig(score_weights={"ClusterLocality": 1, "LeastAllocated": 2, "MostFreeMemory": 1,
                                         "BalancedAllocation": 1})  # fmt: skip
    binding = make_binding(1, spread, previous={"busy": 1}, resource_request={"cpu": 100})
    assert placed(schedule(binding, [busy, idle])) == {"busy": 1}  # locality alone keeps it
    result = schedule(binding, [busy, idle], config)
    assert placed(result) == {"idle": 1}
    parts = result.explanation["clusters"]["idle"]["scores"]
    assert parts["LeastAllocated"]["weight"] == 2 and parts["MostFreeMemory"]["score"] == 100


CLUSTER = {
    "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
    "metadata": {"name": "member1", "labels": {"env": "prod"}},
    "spec": {"syncMode": "Push", "provider": "aws", "region": "us-east-1", "zone": "us-east-1a",
             "taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}]},
    "status": {
        "conditions": [{"type": "Ready", "status": "True"}],
        "apiEnablements": [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
        "resourceSummary": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                            "allocated": {"cpu": "500m", "memory": "1Gi", "pods": 3}},
    },
}  # fmt: skip


def test_snapshot_from_cluster_manifest() -> None:
    snap = from_cluster(CLUSTER)
    assert snap.name == "member1" and snap.ready and snap.zones == ("us-east-1a",)
    assert snap.api_enablements == frozenset({"apps/v1/Deployment"})
    assert snap.allocatable == {"cpu": 4000, "memory": 8 * GIB, "pods": 110}
    assert snap.allocated == {"cpu": 500, "memory": GIB, "pods": 3} and snap.allocating == {}
    assert str(snap.taints[0]) == "cluster.karmada.io/not-ready:NoSchedule"
    bare = from_cluster({"metadata": {"name": "x"}})
    assert bare.allocatable is None and bare.api_enablements is None and not bare.ready
    with pytest.raises(ValueError, match=r"allocatable\.cpu"):
        from_cluster(
            {"metadata": {"name": "x"}, "status": {"resourceSummary": {"allocatable": {"cpu": "lots"}}}}
        )


T0, T1 = datetime(2025, 1, 1), datetime(2025, 1, 2)


def trigger(**kw: object) -> str | None:
    args: dict[str, object] = dict(
        placement=Placement.model_validate(DYNAMIC), applied_placement=Placement.model_validate(DYNAMIC),
        observed_affinity="", replicas=3, is_workload=True, clusters={"a": 3},
        reschedule_triggered_at=None, last_scheduled_time=T0,
    )  # fmt: skip
    args.update(kw)
    return needs_scheduling(**args)  # type: ignore[arg-type]


def test_reschedule_triggers_in_karmada_order() -> None:
    assert trigger() is None
    assert trigger(applied_placement=None) == "PlacementChanged"
    assert trigger(replicas=4) == "ReplicasChanged"
    assert trigger(reschedule_triggered_at=T1) == "RescheduleTriggered"
    assert trigger(placement=Placement(), applied_placement=Placement()) == "DuplicatedOrNonWorkload"
    assert trigger(gone_clusters={"a"}) == "TargetClusterGone"


def test_only_the_observed_affinity_term_counts_as_placement() -> None:
    def terms(second: list[str]) -> Placement:
        return Placement.model_validate({**DYNAMIC, "clusterAffinities": [
            {"affinityName": "x", "clusterNames": ["a"]}, {"affinityName": "y", "clusterNames": second}]})  # fmt: skip

    assert trigger(placement=terms(["c"]), applied_placement=terms(["b"]), observed_affinity="x") is None
    assert (
        trigger(placement=terms(["c"]), applied_placement=terms(["b"]), observed_affinity="y")
        == "PlacementChanged"
    )
