"""Pure pieces of the simulator: selectors, pod placement, workload pods, names.

The patch and apply code the simulator serves lives in ``federation.model.patching`` (tests/model).
"""

from __future__ import annotations

import pytest

from federation.sim.errors import ApiError
from federation.sim.pods import first_fit, free_capacity
from federation.sim.selectors import field_selector, label_selector
from federation.sim.workloads import plan_pods
from tests.members.helpers import deployment


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
    from federation.sim.kinds import ResourceType
    from federation.sim.validation import check_name

    cluster_roles = ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)
    check_name(cluster_roles, "system:aggregate-to-view", None)  # accepted
    with pytest.raises(ApiError):
        check_name(cluster_roles, "a/b", None)
    config_maps = ResourceType("", "v1", "ConfigMap", "configmaps", True)
    with pytest.raises(ApiError):
        check_name(config_maps, "system:x", None)


def test_workload_selectors_use_the_model_label_selector() -> None:
    from federation.sim.kinds import ResourceType
    from federation.sim.validation import check_workload

    deployments = ResourceType("apps", "v1", "Deployment", "deployments", True)
    web = deployment("web", 1)
    check_workload(deployments, web)  # matchLabels selects the template's labels
    web["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}
    check_workload(deployments, web)
    for selector in ({"matchLabels": {"app": "db"}}, {"matchLabels": {"app": 1}}):
        web["spec"]["selector"] = selector
        with pytest.raises(ApiError) as exc:
            check_workload(deployments, web)
        assert exc.value.code == 422
