"""Pure pieces of the simulator: patches, field sets and apply ownership, selectors, pod placement."""

from __future__ import annotations

from typing import Any

import pytest

from federation.members.sim.errors import ApiError
from federation.members.sim.fields import field_paths, from_fields_v1, to_fields_v1
from federation.members.sim.managed import record_update, server_side_apply
from federation.members.sim.patching import json_patch, merge_patch, strategic_merge_patch
from federation.members.sim.pods import first_fit, free_capacity
from federation.members.sim.selectors import field_selector, label_selector
from federation.members.sim.workloads import plan_pods
from tests.members.helpers import deployment


def test_merge_patch_rfc7386() -> None:
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"a": None, "b": {"c": 4}, "e": [1]}) == {
        "b": {"c": 4, "d": 3},
        "e": [1],
    }


def test_strategic_merge_by_name_with_delete_and_directives() -> None:
    live = {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}
    patch = {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}],
        "containers": [
            {"name": "a", "image": "2"},
            {"name": "b", "$patch": "delete"},
            {"name": "c", "image": "3"},
        ],
    }
    assert strategic_merge_patch(live, patch, keyed=True) == {
        "containers": [{"name": "a", "image": "2"}, {"name": "c", "image": "3"}]
    }
    assert strategic_merge_patch(live, {"containers": [{"name": "z"}]}, keyed=False) == {
        "containers": [{"name": "z"}]
    }


def test_json_patch_operations_and_failed_test() -> None:
    doc = {"spec": {"replicas": 1, "list": [1, 2]}}
    ops = [
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/spec/list/-", "value": 9},
        {"op": "remove", "path": "/spec/list/0"},
        {"op": "copy", "from": "/spec/replicas", "path": "/spec/copy"},
    ]
    assert json_patch(doc, ops) == {"spec": {"replicas": 3, "list": [2, 9], "copy": 3}}
    with pytest.raises(ApiError) as exc:
        json_patch(doc, [{"op": "test", "path": "/spec/replicas", "value": 2}])
    assert exc.value.code == 422


def test_fields_v1_round_trip_with_keyed_elements() -> None:
    paths = field_paths(deployment("web", 2), keyed=True)
    rendered = to_fields_v1(paths)
    containers = rendered["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert "." in containers['k:{"name":"app"}']
    assert from_fields_v1(rendered) == paths
    assert ("f:metadata", "f:name") not in paths  # identity is never owned


def test_apply_drops_fields_the_manager_stopped_setting() -> None:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1"}},
        "data": {"x": "1", "y": "2"},
    }
    first = server_side_apply(None, config, "mgr", False, True, "t1")
    smaller = {**config, "data": {"x": "1"}}
    second = server_side_apply(first, smaller, "mgr", False, True, "t2")
    assert second["data"] == {"x": "1"}
    assert second["metadata"]["labels"] == {"a": "1"}


def test_apply_keeps_fields_owned_by_another_manager() -> None:
    base: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"x": "1"},
    }
    applied = server_side_apply(None, base, "a", False, True, "t1")
    edited = {**applied, "data": {"x": "1", "mine": "b"}}
    edited["metadata"] = {
        **applied["metadata"],
        "managedFields": record_update(applied, edited, "editor", True, "t2"),
    }
    reapplied = server_side_apply(edited, base, "a", False, True, "t3")
    assert reapplied["data"] == {"x": "1", "mine": "b"}
    managers = {(e["manager"], e["operation"]) for e in reapplied["metadata"]["managedFields"]}
    assert managers == {("a", "Apply"), ("editor", "Update")}


def test_label_and_field_selectors() -> None:
    obj = {"metadata": {"name": "n", "labels": {"app": "web", "tier": "fe"}}, "status": {"phase": "Running"}}
    assert label_selector("app=web,tier in (fe,be),!missing")(obj)
    assert not label_selector("app!=web")(obj)
    assert label_selector("tier")(obj) and not label_selector("tier notin (fe)")(obj)
    assert field_selector("metadata.name=n,status.phase==Running")(obj)
    assert not field_selector("metadata.name!=n")(obj)
    with pytest.raises(ApiError):
        label_selector("a in b in c)(")(obj)


def test_first_fit_binds_in_node_order_and_respects_every_resource() -> None:
    nodes = [
        {
            "metadata": {"name": "n0", "labels": {}},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "2"}},
        },
        {
            "metadata": {"name": "n1", "labels": {}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "2"}},
        },
    ]
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "800m", "memory": "512Mi"}}}]}}
    free = free_capacity(nodes, [])
    assert [first_fit(pod, nodes, free) for _ in range(5)] == ["n0", "n1", "n1", None, None]


def test_statefulset_pods_are_ordinals() -> None:
    sts = deployment("db", 3)
    sts.update(kind="StatefulSet")
    sts["metadata"]["uid"] = "u1"
    import random

    plan = plan_pods(sts, [], random.Random(0))
    assert [p["metadata"]["name"] for p in plan.create] == ["db-0", "db-1", "db-2"]
    sts["spec"]["replicas"] = 1
    assert plan_pods(sts, plan.create, random.Random(0)).delete == ["db-2", "db-1"]


def test_rbac_names_are_path_segments_like_kube_apiserver() -> None:
    from federation.members.sim.kinds import ResourceType
    from federation.members.sim.validation import check_name

    cluster_roles = ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)
    check_name(cluster_roles, "system:aggregate-to-view", None)  # accepted
    with pytest.raises(ApiError):
        check_name(cluster_roles, "a/b", None)
    config_maps = ResourceType("", "v1", "ConfigMap", "configmaps", True)
    with pytest.raises(ApiError):
        check_name(config_maps, "system:x", None)
