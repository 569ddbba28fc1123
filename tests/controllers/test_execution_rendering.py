"""Rendering and planning Works as pure functions (Karmada ensureWork / RemoveIrrelevantFields)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.controllers.rendering import (
    StoredWork,
    WorkKey,
    plan_works,
    prune,
    render_works,
    targets_of,
    tombstoned,
    tombstoned_extra,
)
from federation.store.manifest import split
from federation.store.works import SpecDigest

TEMPLATE = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "namespace": "prod",
        "uid": "t-1",
        "generation": 4,
        "resourceVersion": "9",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "ownerReferences": [{"kind": "X"}],
        "finalizers": ["f"],
        "annotations": {"deployment.kubernetes.io/revision": "3", "team": "a"},
    },
    "spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    "status": {"readyReplicas": 5},
}


def _binding(clusters: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "kind": "ResourceBinding",
        "metadata": {"name": "web-deployment", "namespace": "prod", "uid": "b-1"},
        "spec": {"resource": {"uid": "t-1"}, "replicas": 5, "clusters": clusters, **spec},
    }


def test_prune_removes_server_fields_and_status() -> None:
    pruned = prune(TEMPLATE)
    assert set(pruned["metadata"]) == {"name", "namespace", "annotations"}
    assert pruned["metadata"]["annotations"] == {"team": "a"}
    assert "status" not in pruned
    assert TEMPLATE["status"] == {"readyReplicas": 5}  # the input is not touched


def test_service_cluster_ip_is_pruned_unless_headless() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"]},
    }
    assert prune(service)["spec"] == {}
    headless = {**service, "spec": {"clusterIP": "None"}}
    assert prune(headless)["spec"] == {"clusterIP": "None"}


def test_targets_of_a_workload_and_of_its_dependencies() -> None:
    binding = _binding(
        [{"name": "a", "replicas": 2}],
        requiredBy=[{"name": "other", "clusters": [{"name": "a"}, {"name": "b"}]}],
    )
    assert [(t.cluster, t.replicas) for t in targets_of(binding)] == [("a", 2), ("b", None)]
    not_workload = {"spec": {"clusters": [{"name": "a", "replicas": 2}]}}
    assert [(t.cluster, t.replicas) for t in targets_of(not_workload)] == [("a", None)]


def test_rendered_works_carry_replicas_and_dispatch_options() -> None:
    binding = _binding(
        [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 3}],
        suspension={"dispatchingOnClusters": {"clusterNames": ["b"]}},
        preserveResourcesOnDeletion=True,
    )
    a, b = render_works(binding, TEMPLATE)
    assert [w["spec"]["workload"]["manifests"][0]["spec"]["replicas"] for w in (a, b)] == [2, 3]
    assert "suspendDispatching" not in a["spec"] and b["spec"]["suspendDispatching"] is True
    assert a["spec"]["preserveResourcesOnDeletion"] is True
    assert render_works(binding, TEMPLATE) == [a, b]  # deterministic


def _existing(binding: dict[str, Any]) -> list[dict[str, Any]]:
    works = render_works(binding, TEMPLATE)
    for i, work in enumerate(works):
        work["metadata"]["resourceVersion"] = str(i + 1)
    return works


def test_plan_is_empty_when_nothing_changed() -> None:
    binding = _binding([{"name": "a", "replicas": 2}])
    plan = plan_works(binding, render_works(binding, TEMPLATE), _existing(binding))
    assert plan.writes == 0 and not plan.blocked


def test_plan_revives_a_tombstoned_work_that_is_wanted_again() -> None:
    binding = _binding([{"name": "a", "replicas": 2}])
    [old] = _existing(binding)
    plan = plan_works(binding, render_works(binding, TEMPLATE), [tombstoned(old, "2026-01-01T00:00:00Z")])
    assert plan.resurrect == (WorkKey("karmada-es-a", old["metadata"]["name"]),)
    [replaced] = plan.replace
    assert "deletionTimestamp" not in replaced["metadata"] and replaced["metadata"]["resourceVersion"] == "1"


def test_plan_tombstones_dropped_clusters_once() -> None:
    before = _binding([{"name": "a", "replicas": 2}, {"name": "b", "replicas": 3}])
    after = _binding([{"name": "a", "replicas": 5}])
    existing = _existing(before)
    plan = plan_works(after, render_works(after, TEMPLATE), existing)
    assert [k.namespace for k in plan.tombstone] == ["karmada-es-b"]
    assert len(plan.replace) == 1
    existing[1] = tombstoned(existing[1], "2026-01-01T00:00:00Z")
    assert plan_works(after, render_works(after, TEMPLATE), existing).tombstone == ()


def test_failover_budget_bookkeeping_stays_in_the_control_plane() -> None:
    template = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "annotations": {
                "failover.federation.io/reschedule-count": "1",
                "failover.federation.io/tried-clusters": '["member1"]',
                "failover.federation.io/max-reschedules": "3",
            },
        },
    }
    assert prune(template)["metadata"]["annotations"] == {"failover.federation.io/max-reschedules": "3"}


def _summarised(work: dict[str, Any]) -> StoredWork:
    """``work`` as the controller sees a stored Work it did not load whole (spec as a ``SpecDigest``)."""
    whole = StoredWork.of(work)
    return StoredWork(
        whole.key,
        whole.resource_version,
        whole.tombstoned,
        whole.labels,
        whole.annotations,
        whole.finalizers,
        SpecDigest.of(work["spec"]),
    )


def test_a_plan_from_summaries_is_the_plan_from_whole_works() -> None:
    before = _binding(
        [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 3}, {"name": "c", "replicas": 1}]
    )
    after = _binding(
        [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}, {"name": "d", "replicas": 3}],
        suspension={"dispatchingOnClusters": {"clusterNames": ["a"]}},
    )
    existing = _existing(before)
    existing[2] = tombstoned(existing[2], "2026-01-01T00:00:00Z")
    desired = render_works(after, TEMPLATE)
    whole = plan_works(after, desired, existing)
    assert plan_works(after, desired, [_summarised(w) for w in existing]) == whole
    assert [k.namespace for k in whole.tombstone] == []  # c was tombstoned already
    assert [w["metadata"]["namespace"] for w in whole.replace] == ["karmada-es-a", "karmada-es-b"]
    assert [w["metadata"]["namespace"] for w in whole.create] == ["karmada-es-d"]
    unchanged = [_summarised(w) for w in _existing(after)]
    assert plan_works(after, render_works(after, TEMPLATE), unchanged).writes == 0


@pytest.mark.parametrize("extra", [{}, {"finalizers": ["someone/else"], "ownerReferences": [{"name": "o"}]}])
def test_tombstoned_extra_is_what_tombstoned_makes_of_the_stored_extra_metadata(
    extra: dict[str, Any],
) -> None:
    work = {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "w", "namespace": "karmada-es-m1", "labels": {"a": "b"}, **extra},
        "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap"}]}},
    }
    stamp = "2026-01-01T00:00:00Z"
    whole = split(tombstoned(work, stamp)).metadata_extra
    assert tombstoned_extra(split(work).metadata_extra, stamp) == whole
    assert work["metadata"] == {"name": "w", "namespace": "karmada-es-m1", "labels": {"a": "b"}, **extra}
