"""Resource fit on by default: a replica that cannot fit on a cluster filters it (Duplicated included);
``resource_fit=False`` gives Karmada's answers back."""

from __future__ import annotations

from federation.scheduling.engine import schedule
from federation.scheduling.types import ClusterSnapshot, EngineConfig, Headroom
from tests.scheduling.sched_factories import DYNAMIC, GIB, make_binding, make_cluster

KARMADA = EngineConfig(resource_fit=False)
DUPLICATED: dict[str, object] = {}
PROD_ONLY = {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}


def placed(result: object) -> dict[str, int]:
    return {t.name: t.replicas for t in result.clusters}  # type: ignore[attr-defined]


def sized(name: str, cpu: int, memory: int = 64 * GIB, **overrides: object) -> ClusterSnapshot:
    return make_cluster(name, allocatable={"cpu": cpu, "memory": memory, "pods": 110}, **overrides)


def reason(result: object, cluster: str) -> str | None:
    return result.explanation["clusters"][cluster]["filter"].get("reason")  # type: ignore[attr-defined, no-any-return]


def test_fit_is_on_by_default() -> None:
    assert EngineConfig().resource_fit


def test_duplicated_skips_a_cluster_that_cannot_hold_every_replica() -> None:
    binding = make_binding(3, DUPLICATED, resource_request={"cpu": 2000})
    clusters = [sized("small", 5000), sized("big", 6000)]
    result = schedule(binding, clusters)
    assert placed(result) == {"big": 3}
    assert reason(result, "small") == "cluster(s) had insufficient cpu"
    assert placed(schedule(binding, clusters, KARMADA)) == {"small": 3, "big": 3}


def test_divided_skips_a_cluster_without_room_for_one_replica() -> None:
    binding = make_binding(4, DYNAMIC, resource_request={"cpu": 1000, "memory": 8 * GIB})
    clusters = [sized("tight", 64_000, memory=7 * GIB), sized("roomy", 64_000)]
    result = schedule(binding, clusters)
    assert placed(result) == {"roomy": 4}
    assert reason(result, "tight") == "cluster(s) had insufficient memory"
    # Karmada keeps it a candidate with no available replicas: same placement, no filter verdict.
    karmada = schedule(binding, clusters, KARMADA)
    assert placed(karmada) == {"roomy": 4} and reason(karmada, "tight") is None


def test_every_requested_resource_and_a_pod_slot_count() -> None:
    binding = make_binding(1, DUPLICATED, resource_request={"nvidia.com/gpu": 1})
    gpu = make_cluster("gpu", allocatable={"pods": 10, "nvidia.com/gpu": 2})
    no_gpu = make_cluster("plain", allocatable={"pods": 10})
    full = make_cluster("full", allocatable={"pods": 10, "nvidia.com/gpu": 2}, allocated={"pods": 10})
    result = schedule(binding, [gpu, no_gpu, full])
    assert placed(result) == {"gpu": 1}
    assert reason(result, "plain") == "cluster(s) had insufficient nvidia.com/gpu"
    assert reason(result, "full") == "cluster(s) had insufficient pods"


def test_unrequested_resources_are_not_checked_without_a_rule() -> None:
    overcommitted = sized("over", 64_000, memory=GIB, allocated={"memory": 2 * GIB})
    result = schedule(make_binding(2, DUPLICATED, resource_request={"cpu": 100}), [overcommitted])
    assert placed(result) == {"over": 2}


def test_unknown_capacity_current_targets_and_non_workloads_pass() -> None:
    unknown = ClusterSnapshot("unknown", api_enablements=make_cluster().api_enablements)
    full = sized("full", 1000, allocated={"cpu": 1000})
    request = {"cpu": 500}
    assert placed(schedule(make_binding(2, DUPLICATED, resource_request=request), [unknown])) == {
        "unknown": 2
    }
    staying = make_binding(2, DUPLICATED, resource_request=request, previous={"full": 2})
    assert placed(schedule(staying, [full])) == {"full": 2}  # its own replicas are in `allocated`
    config_map = make_binding(0, DUPLICATED, kind="ConfigMap", api_version="v1")
    assert [t.name for t in schedule(config_map, [full]).clusters] == ["full"]


def test_a_capacity_shortfall_is_unschedulable_and_keeps_the_placement() -> None:
    """No cluster fits only for lack of capacity: capacity can free up without any cluster event, so the
    binding keeps its placement and is retried with back-off (Unschedulable), not cleared (NoClusterFit)."""
    binding = make_binding(2, DYNAMIC, resource_request={"cpu": 4000}, previous={"gone": 2})
    clusters = [sized("a", 2000), sized("b", 3000, labels={"env": "dev"})]
    result = schedule(binding, clusters)
    assert result.result == "Unschedulable" and not result.writes_clusters
    assert placed(result) == {"gone": 2}
    assert result.message == "0/2 clusters are available: 2 cluster(s) had insufficient cpu."


def test_a_cluster_blocked_only_by_capacity_makes_the_failure_unschedulable() -> None:
    binding = make_binding(2, {**DYNAMIC, **PROD_ONLY}, resource_request={"cpu": 4000})
    clusters = [sized("dev", 64_000, labels={"env": "dev"}), sized("prod", 2000, labels={"env": "prod"})]
    assert schedule(binding, clusters).result == "Unschedulable"
    no_prod = [sized("dev", 64_000, labels={"env": "dev"})]
    assert schedule(binding, no_prod).result == "NoClusterFit"  # nothing but affinity: cleared


def test_headroom_still_filters_when_default_fit_is_off() -> None:
    config = EngineConfig(resource_fit=False, headroom={"cpu": Headroom(percent=50)})
    binding = make_binding(1, DUPLICATED, resource_request={"cpu": 1000})
    clusters = [sized("half-used", 4000, allocated={"cpu": 1500}), sized("idle", 4000)]
    result = schedule(binding, clusters, config)
    assert placed(result) == {"idle": 1}
    assert reason(result, "half-used") == "cluster(s) had insufficient cpu"
