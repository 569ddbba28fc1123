"""End-to-end engine behaviour: strategies, failures, affinities, avoid list, explanation, batching."""

from __future__ import annotations

import json

from federation.scheduling.engine import assume, schedule
from federation.scheduling.types import EngineConfig, TargetCluster
from tests.scheduling.sched_factories import AGGREGATED, DYNAMIC, make_binding, make_cluster, pods_only

NOT_READY = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}


def placed(result: object) -> dict[str, int]:
    return {t.name: t.replicas for t in result.clusters}  # type: ignore[attr-defined]


def test_duplicated_ignores_capacity() -> None:
    clusters = [pods_only("a", 1), pods_only("b", 0)]
    result = schedule(make_binding(5), clusters, EngineConfig(disabled_plugins=frozenset({"ResourceFit"})))
    assert placed(result) == {"a": 5, "b": 5}
    assert result.message == "Binding has been scheduled successfully."


def test_non_workload_goes_everywhere_without_replicas() -> None:
    binding = make_binding(0, {"replicaScheduling": {}}, kind="ConfigMap", api_version="v1")
    result = schedule(binding, [make_cluster("a"), make_cluster("b")])
    assert result.clusters == (TargetCluster("a", 0), TargetCluster("b", 0))


def test_static_weight_uses_max_matching_rule_and_skips_unmatched() -> None:
    rules = [
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "gold"}}}, "weight": 2},
        {"targetCluster": {"clusterNames": ["a"]}, "weight": 3},
    ]
    placement = {"replicaScheduling": {"weightPreference": {"staticWeightList": rules}}}
    clusters = [make_cluster("a", labels={"tier": "gold"}), make_cluster("b", labels={"tier": "gold"}),
                make_cluster("c")]  # fmt: skip
    assert placed(schedule(make_binding(10, placement), clusters)) == {"a": 6, "b": 4}


def test_static_weight_ignores_spread_constraints() -> None:
    placement = {
        "replicaScheduling": {"weightPreference": {"staticWeightList": [
            {"targetCluster": {"clusterNames": ["a", "b", "c"]}, "weight": 1}]}},
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
    }  # fmt: skip
    clusters = [make_cluster(n) for n in "abc"]
    assert placed(schedule(make_binding(3, placement), clusters)) == {"a": 1, "b": 1, "c": 1}


def test_dynamic_first_schedule_follows_capacity() -> None:
    result = schedule(make_binding(12, DYNAMIC), [pods_only("a", 10), pods_only("b", 20), pods_only("c", 30)])
    assert placed(result) == {"a": 2, "b": 4, "c": 6}
    assert result.explanation["division"]["mode"] == "scale-up"


def test_dynamic_scale_down_is_proportional_to_current() -> None:
    binding = make_binding(6, DYNAMIC, previous={"a": 2, "b": 4, "c": 6})
    result = schedule(binding, [pods_only(n, 100) for n in "abc"])
    assert placed(result) == {"a": 1, "b": 2, "c": 3}


def test_dynamic_fresh_ignores_previous_placement() -> None:
    clusters = [pods_only("a", 0), pods_only("b", 10)]
    steady = schedule(make_binding(4, DYNAMIC, previous={"a": 4}), clusters)
    assert placed(steady) == {"a": 4}
    fresh = schedule(make_binding(4, DYNAMIC, previous={"a": 4}, fresh=True), clusters)
    # Fresh weights are free capacity plus own replicas: a 0+4, b 10 → 4 split 1:3 by Webster.
    assert placed(fresh) == {"a": 1, "b": 3}


def test_aggregated_prefers_previous_clusters_then_fewest() -> None:
    binding = make_binding(24, AGGREGATED, previous={"m1": 4, "m2": 8})
    result = schedule(binding, [pods_only("m1", 4), pods_only("m2", 6), pods_only("m3", 8)])
    assert placed(result) == {"m1": 7, "m2": 12, "m3": 5}
    first = schedule(
        make_binding(5, AGGREGATED), [pods_only("m1", 4), pods_only("m2", 6), pods_only("m3", 8)]
    )
    assert placed(first) == {"m3": 5}


def test_lost_cluster_replicas_become_scale_up_elsewhere() -> None:
    binding = make_binding(6, DYNAMIC, previous={"a": 3, "gone": 3})
    result = schedule(binding, [pods_only("a", 10), pods_only("b", 10)])
    assert placed(result)["a"] >= 3 and sum(placed(result).values()) == 6


def test_unschedulable_keeps_previous_placement() -> None:
    binding = make_binding(50, DYNAMIC, previous={"a": 2})
    result = schedule(binding, [pods_only("a", 5), pods_only("b", 5)])
    assert result.result == "Unschedulable" and not result.writes_clusters
    assert result.clusters == (TargetCluster("a", 2),)
    assert result.message == "Clusters available replicas 10 are not enough to schedule."


def test_no_cluster_fit_message_in_kube_scheduler_style() -> None:
    clusters = [make_cluster(f"ok{i}", taints=[NOT_READY]) for i in range(2)]
    clusters += [make_cluster(f"other{i}") for i in range(3)]
    placement = {"clusterAffinity": {"clusterNames": ["ok0", "ok1"]}}
    result = schedule(make_binding(2, placement, previous={"x": 2}), clusters)
    assert result.result == "NoClusterFit" and result.clusters == () and result.writes_clusters
    assert result.message == (
        "0/5 clusters are available: 2 cluster(s) had untolerated taint "
        "{cluster.karmada.io/not-ready: }, 3 cluster(s) did not match the placement cluster "
        "affinity constraint."
    )
    assert schedule(make_binding(1), []).message == "0/0 clusters are available: no cluster exists."


def test_taint_does_not_drop_existing_placement_and_toleration_works() -> None:
    clusters = [make_cluster("a", taints=[NOT_READY]), make_cluster("b")]
    assert placed(schedule(make_binding(1, previous={"a": 1}), clusters)) == {"a": 1, "b": 1}
    tolerate = {"clusterTolerations": [{"key": "cluster.karmada.io/not-ready", "operator": "Exists"}]}
    assert placed(schedule(make_binding(1, tolerate), clusters)) == {"a": 1, "b": 1}
    assert placed(schedule(make_binding(1), clusters)) == {"b": 1}


def test_eviction_and_deleting_clusters_are_skipped() -> None:
    clusters = [make_cluster("a"), make_cluster("b"), make_cluster("c", deleting=True)]
    result = schedule(make_binding(1, eviction_clusters=frozenset({"a"})), clusters)
    assert placed(result) == {"b": 1}
    assert (
        result.explanation["clusters"]["a"]["filter"]["reason"] == "cluster(s) is in the process of eviction"
    )
    assert "c" not in result.explanation["clusters"]


def test_cluster_affinities_fall_through_and_remember_the_term() -> None:
    placement = {**DYNAMIC, "clusterAffinities": [
        {"affinityName": "primary", "clusterNames": ["a"]},
        {"affinityName": "backup", "clusterNames": ["b"]}]}  # fmt: skip
    clusters = [pods_only("a", 1), pods_only("b", 10)]
    result = schedule(make_binding(4, placement), clusters)
    assert result.affinity_name == "backup" and placed(result) == {"b": 4}
    assert [a["result"] for a in result.explanation["attempts"]] == ["Unschedulable", "Success"]
    # Observed term is where it starts; it never moves back by itself, only a reschedule trigger resets it.
    roomy = [pods_only("a", 10), pods_only("b", 10)]
    again = schedule(make_binding(4, placement, observed_affinity="backup"), roomy)
    assert again.affinity_name == "backup"
    fresh = schedule(make_binding(4, placement, observed_affinity="backup", fresh=True), roomy)
    assert fresh.affinity_name == "primary"


def test_cluster_affinities_all_fail_with_fit_error_clear_clusters() -> None:
    placement = {"clusterAffinities": [{"affinityName": "x", "clusterNames": ["nope"]},
                                       {"affinityName": "y", "clusterNames": ["none"]}]}  # fmt: skip
    result = schedule(
        make_binding(1, placement, observed_affinity="x", previous={"a": 1}), [make_cluster("a")]
    )
    assert result.result == "NoClusterFit" and result.clusters == () and result.affinity_name == "x"


def test_overflow_affinities_fill_primary_first() -> None:
    placement = {**DYNAMIC, "clusterAffinities": [{"affinityName": "idc", "clusterNames": ["idc"],
                 "overflowAffinities": [{"affinityName": "cloud", "clusterNames": ["cloud"]}]}]}  # fmt: skip
    clusters = [pods_only("idc", 2), pods_only("cloud", 10), pods_only("other", 10)]
    assert placed(schedule(make_binding(5, placement), clusters)) == {"idc": 2, "cloud": 3}


def test_avoid_list_is_honoured_then_ignored_with_a_note() -> None:
    clusters = [pods_only("a", 10), pods_only("b", 10)]
    avoided = schedule(make_binding(4, DYNAMIC, avoid=frozenset({"a"})), clusters)
    assert placed(avoided) == {"b": 4} and not avoided.avoid_ignored
    forced = schedule(make_binding(4, DYNAMIC, avoid=frozenset({"a", "b"})), clusters)
    assert forced.succeeded and forced.avoid_ignored and "avoid list (a, b) was ignored" in forced.message


def test_spread_by_cluster_picks_top_scored_and_swaps_for_capacity() -> None:
    spread = {**DYNAMIC, "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}]}
    clusters = [pods_only("a", 5), pods_only("b", 50), pods_only("c", 40)]
    result = schedule(make_binding(60, spread, previous={"a": 1}), clusters)
    assert set(placed(result)) == {"b", "c"} or set(placed(result)) == {"a", "b"}
    assert sum(placed(result).values()) == 60


def test_explanation_is_json_and_complete() -> None:
    clusters = [pods_only("a", 10), make_cluster("b", taints=[NOT_READY])]
    result = schedule(make_binding(3, DYNAMIC, previous={"a": 1}), clusters)
    doc = json.loads(json.dumps(result.explanation))
    a, b = doc["clusters"]["a"], doc["clusters"]["b"]
    assert a["filter"]["passed"] and a["scores"]["ClusterLocality"] == {"score": 100, "weight": 1}
    assert a["selected"] and a["replicas"] == 3 and a["available"] == 11
    assert b["filter"]["plugin"] == "TaintToleration" and not b["selected"]
    assert doc["division"]["strategy"] == "DynamicWeight" and doc["selection"]["order"] == ["a"]


def test_assume_prevents_overcommit_in_one_cycle() -> None:
    clusters = [make_cluster("a", allocatable={"cpu": 4000, "pods": 100})]
    binding = make_binding(4, DYNAMIC, resource_request={"cpu": 1000})
    first = schedule(binding, clusters)
    assert placed(first) == {"a": 4}
    clusters = assume(clusters, first, binding.resource_request)
    assert clusters[0].allocating == {"cpu": 4000, "pods": 4}
    assert schedule(make_binding(1, DYNAMIC, resource_request={"cpu": 1000}), clusters).result != "Success"


def test_deterministic_for_any_cluster_order() -> None:
    clusters = [pods_only(f"m{i}", 7 + i % 3) for i in range(9)]
    binding = make_binding(23, DYNAMIC, uid="5f0c")
    assert schedule(binding, clusters) == schedule(binding, list(reversed(clusters)))
