"""The planner's two halves: a stored binding → engine input, and an engine result → the binding written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from federation.model.binding import APPLIED_PLACEMENT_ANNOTATION
from federation.scheduling import planner, triggers
from federation.scheduling.types import ClusterSnapshot, Headroom, ScheduleResult, TargetCluster
from federation.settings import SchedulerSettings

NOW = datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC)
DYNAMIC = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }
}


def make_binding(**spec: Any) -> dict[str, Any]:
    status = spec.pop("status", None)
    body: dict[str, Any] = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "web-deployment", "namespace": "shop", "uid": "rb-uid", "generation": 3},
        "spec": {
            "resource": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "namespace": "shop",
                "uid": "t-uid",
            },
            "placement": DYNAMIC,
            **spec,
        },
    }
    if status is not None:
        body["status"] = status
    return body


def workload_policy(
    name: str, namespace: str = "shop", selector: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "kosmos.io/v1alpha1",
        "kind": "WorkloadPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "topologyKey": "role",
            "labelSelector": {"matchLabels": selector or {"app": "web"}},
            "allocationPolicy": [{"name": "host", "replicas": 1}],
        },
    }


def template(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": labels},
    }


def test_binding_input_reads_the_binding() -> None:
    binding = make_binding(
        replicas=4,
        replicaRequirements={"resourceRequest": {"cpu": "250m", "memory": "1Gi"}},
        clusters=[{"name": "m1", "replicas": 3}, {"name": "m2", "replicas": 1}],
        gracefulEvictionTasks=[{"fromCluster": "m2", "reason": "TaintUntolerated", "producer": "x"}],
        rescheduleTriggeredAt="2026-05-01T07:00:00Z",
        status={"lastScheduledTime": "2026-05-01T06:00:00Z", "schedulerObservingAffinityName": "primary"},
    )
    given = planner.binding_input(binding, None)
    assert (given.kind, given.namespace, given.uid, given.replicas) == ("Deployment", "shop", "t-uid", 4)
    assert given.resource_request == {"cpu": 250, "memory": 1024**3}
    assert given.has_replica_requirements and given.is_workload
    assert dict(given.previous) == {"m1": 3, "m2": 1}
    assert given.fresh  # triggered after the last schedule
    assert given.eviction_clusters == frozenset({"m2"})
    assert given.observed_affinity == "primary"
    assert given.placement.strategy() == "DynamicWeight"
    steady = make_binding(
        rescheduleTriggeredAt="2026-05-01T05:00:00Z", status={"lastScheduledTime": "2026-05-01T06:00:00Z"}
    )
    assert not planner.binding_input(steady, None).fresh


def test_workload_policy_by_label_then_by_selector() -> None:
    policies = [
        workload_policy("b-selects"),
        workload_policy("a-named", selector={"app": "other"}),
        workload_policy("elsewhere", "other-ns"),
    ]
    named = planner.binding_input(
        make_binding(), template({"app": "web", "workload-policy.kosmos.io": "a-named"}), policies
    )
    assert named.workload_policy is not None and named.workload_policy.label_selector.matches(
        {"app": "other"}
    )
    selected = planner.binding_input(make_binding(), template({"app": "web"}), policies)
    assert selected.workload_policy is not None and selected.workload_policy.label_selector.matches(
        {"app": "web"}
    )
    assert planner.binding_input(make_binding(), template({"app": "none"}), policies).workload_policy is None
    assert planner.binding_input(make_binding(), None, policies).workload_policy is None


def test_trigger_follows_karmada() -> None:
    binding = make_binding(replicas=2)
    assert planner.scheduling_trigger(binding) == "PlacementChanged"  # never applied
    applied = make_binding(replicas=2, clusters=[{"name": "m1", "replicas": 2}])
    applied["metadata"]["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: json.dumps(DYNAMIC)}
    assert planner.scheduling_trigger(applied) is None
    assert planner.scheduling_trigger(applied, {"m1"}) == "TargetClusterGone"
    applied["spec"]["replicas"] = 3
    assert planner.scheduling_trigger(applied) == "ReplicasChanged"


def success(
    *targets: tuple[str, int], message: str = "Binding has been scheduled successfully."
) -> ScheduleResult:
    clusters = tuple(TargetCluster(n, r) for n, r in targets)
    return ScheduleResult(
        clusters, "Success", message, {"strategy": "DynamicWeight"}, affinity_name="primary"
    )


def test_apply_success_writes_karmadas_fields() -> None:
    binding = make_binding(replicas=3)
    written = planner.apply_result(binding, success(("m1", 2), ("m2", 1)), NOW, "PlacementChanged")
    assert written["spec"]["clusters"] == [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}]
    assert json.loads(written["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION]) == DYNAMIC
    assert written["metadata"]["generation"] == 4  # spec.clusters is spec
    status = written["status"]
    assert status["conditions"] == [
        {
            "type": "Scheduled",
            "status": "True",
            "reason": "Success",
            "message": "Binding has been scheduled successfully.",
            "lastTransitionTime": "2026-05-01T08:00:00Z",
        }
    ]
    assert status["schedulerObservedGeneration"] == 4
    assert status["lastScheduledTime"] == "2026-05-01T08:00:00Z"
    assert status["schedulerObservingAffinityName"] == "primary"
    assert status["schedulingExplanation"] == {
        "result": "Success",
        "trigger": "PlacementChanged",
        "strategy": "DynamicWeight",
    }
    assert "status" not in binding  # the input is untouched


def test_apply_failures() -> None:
    scheduled = planner.apply_result(make_binding(replicas=3), success(("m1", 3)), NOW)
    later = NOW.replace(hour=9)
    short = ScheduleResult((TargetCluster("m1", 3),), "Unschedulable", "not enough", {}, unplaced=5)
    kept = planner.apply_result(scheduled, short, later, "ReplicasChanged")
    assert kept["spec"]["clusters"] == [{"name": "m1", "replicas": 3}]
    assert kept["metadata"]["generation"] == scheduled["metadata"]["generation"]
    condition = kept["status"]["conditions"][0]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        "not enough",
    )
    assert condition["lastTransitionTime"] == "2026-05-01T09:00:00Z"
    assert kept["status"]["lastScheduledTime"] == "2026-05-01T08:00:00Z"  # only moves on success
    assert kept["status"]["schedulingExplanation"]["unplaced"] == 5
    again = planner.apply_result(kept, short, later.replace(hour=10))
    assert again["status"]["conditions"][0]["lastTransitionTime"] == "2026-05-01T09:00:00Z"  # no flip
    nofit = ScheduleResult((), "NoClusterFit", "0/1 clusters are available: no cluster exists.", {})
    cleared = planner.apply_result(scheduled, nofit, later)
    assert (
        cleared["spec"]["clusters"] == [] and cleared["status"]["conditions"][0]["reason"] == "NoClusterFit"
    )


def test_non_workload_targets_omit_replicas() -> None:
    result = ScheduleResult((TargetCluster("m1"), TargetCluster("m2")), "Success", "ok", {})
    assert planner.target_entries(result) == [{"name": "m1"}, {"name": "m2"}]


def test_engine_config_from_settings() -> None:
    settings = SchedulerSettings.model_validate(
        {
            "score_weights": {"ClusterLocality": 1, "LeastAllocated": 2},
            "headroom": {"ephemeral-storage": {"percent": 10, "floor": "250Gi"}, "cpu": {"floor": "500m"}},
            "enable_empty_workload_propagation": True,
        }
    )
    config = planner.engine_config(settings)
    assert config.score_weights == {"ClusterLocality": 1, "LeastAllocated": 2}
    assert config.headroom == {"ephemeral-storage": Headroom(10.0, 250 * 1024**3), "cpu": Headroom(0.0, 500)}
    assert config.enable_empty_workload_propagation


def test_affected_by_cluster_affinity() -> None:
    prod = ClusterSnapshot("p", labels={"env": "prod"})
    dev = ClusterSnapshot("d", labels={"env": "dev"})
    assert planner.affected_by({}, dev)  # no affinity: every cluster matters
    selector = {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
    assert planner.affected_by(selector, prod) and not planner.affected_by(selector, dev)
    terms = {
        "clusterAffinities": [
            {"affinityName": "a", "clusterNames": ["x"]},
            {"affinityName": "b", "labelSelector": {"matchLabels": {"env": "dev"}}},
        ]
    }
    assert planner.affected_by(terms, dev) and not planner.affected_by(terms, prod)


def test_apply_result_leaves_the_binding_as_it_was() -> None:
    """The written manifest shares what it does not change with the binding, which stays as it was."""
    status = {"conditions": [{"type": "Scheduled", "status": "False", "reason": "NoClusterFit"}]}
    binding = make_binding(replicas=3, clusters=[{"name": "m9", "replicas": 3}], status=status)
    binding["metadata"]["annotations"] = {"team": "a"}
    before = json.dumps(binding, sort_keys=True)
    written = planner.apply_result(binding, success(("m1", 3)), NOW, "PlacementChanged")
    written["metadata"]["generation"] = 99  # a caller's own edits stay in what it was given
    written["status"]["schedulerObservedGeneration"] = 99
    synced = planner.sync_observed_generation(binding)
    synced["metadata"]["generation"] = 98
    assert json.dumps(binding, sort_keys=True) == before
    assert written["spec"]["placement"] is binding["spec"]["placement"]  # shared, not copied


def test_placements_are_parsed_once_and_shared() -> None:
    first, second = make_binding(), make_binding()
    second["spec"]["placement"] = json.loads(json.dumps(DYNAMIC))  # equal, another object
    assert planner.placement_of(first) is planner.placement_of(second)
    other = make_binding(placement={"replicaScheduling": {"replicaSchedulingType": "Duplicated"}})
    assert planner.placement_of(other) != planner.placement_of(first)
    annotated = make_binding()
    annotated["metadata"]["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: json.dumps(DYNAMIC)}
    assert planner.applied_placement(annotated) is planner.placement_of(first)  # one object, any spelling
    reordered = dict(reversed(list(DYNAMIC.items())))
    annotated["metadata"]["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: json.dumps(reordered, indent=1)}
    assert planner.applied_placement(annotated) is planner.placement_of(first)
    annotated["metadata"]["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: "{not json"}
    assert planner.applied_placement(annotated) is None
    assert planner.applied_placement(annotated) is None  # kept as unreadable, still None


def test_an_unchanged_placement_is_seen_without_serializing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The applied placement and the current one are one object when equal: no dump, no trigger."""
    applied = make_binding(replicas=2, clusters=[{"name": "m1", "replicas": 2}])
    applied["metadata"]["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: json.dumps(DYNAMIC)}
    planner.scheduling_trigger(applied)  # parsed and kept

    def refuse(*_: Any) -> None:
        raise AssertionError("an unchanged placement was serialized")

    monkeypatch.setattr(triggers, "_observed_view", refuse)
    assert planner.scheduling_trigger(applied) is None
    monkeypatch.undo()
    changed = {**DYNAMIC, "clusterAffinity": {"clusterNames": ["m1"]}}
    applied["spec"]["placement"] = changed
    assert planner.scheduling_trigger(applied) == "PlacementChanged"


def test_gone_clusters_are_the_targets_not_live() -> None:
    binding = make_binding(clusters=[{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 1}])
    snapshots = [ClusterSnapshot(name="m1"), ClusterSnapshot(name="m3", deleting=True)]
    assert planner.gone_clusters(binding, planner.live_clusters(snapshots)) == {"m2"}
    live = planner.live_clusters([*snapshots, ClusterSnapshot(name="m2", deleting=True)])
    assert live == {"m1"}
    assert planner.gone_clusters(binding, live) == {"m2"}
    assert planner.gone_clusters(make_binding(), live) == set()


def test_the_placement_cache_is_bounded() -> None:
    for index in range(planner.PLACEMENT_CACHE_LIMIT + 10):
        placement = {"clusterAffinity": {"clusterNames": [f"member{index}"]}}
        assert planner.placement_of(make_binding(placement=placement)).cluster_affinity is not None
    assert len(planner._PLACEMENTS) <= planner.PLACEMENT_CACHE_LIMIT
