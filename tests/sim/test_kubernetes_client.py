"""The simulator driven by the official ``kubernetes`` client, unchanged, over TLS with a bearer token."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as kconfig
from kubernetes import dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError, UnprocessibleEntityError

from federation.sim import RunningSimulator
from tests.members.helpers import deployment, wait_for


def _dynamic(sim: RunningSimulator, token: str | None = None) -> dynamic.DynamicClient:
    kubeconfig = sim.kubeconfig
    if token is not None:
        kubeconfig["users"][0]["user"]["token"] = token
    return dynamic.DynamicClient(kconfig.new_client_from_config_dict(kubeconfig))


def _deployments(sim: RunningSimulator) -> Any:
    return _dynamic(sim).resources.get(api_version="apps/v1", kind="Deployment")


def test_server_side_apply_get_ready_and_delete(sim: RunningSimulator) -> None:
    dyn = _dynamic(sim)
    deploys = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    created = deploys.server_side_apply(
        body=deployment("web", 3), field_manager="federation", force_conflicts=True
    )
    assert created.metadata.generation == 1
    assert created.metadata.managedFields[0].manager == "federation"
    assert created.metadata.managedFields[0].operation == "Apply"

    def ready() -> Any:
        status = deploys.get(name="web", namespace="default").status
        return status if status.readyReplicas == 3 else None

    status = wait_for(ready, what="3 ready replicas")
    assert (status.replicas, status.availableReplicas, status.updatedReplicas) == (3, 3, 3)
    assert status.observedGeneration == 1
    available = {c.type: c.status for c in status.conditions}
    assert available == {"Available": "True", "Progressing": "True"}

    pods = dyn.resources.get(api_version="v1", kind="Pod")
    assert len(pods.get(namespace="default", label_selector="app=web").items) == 3
    deploys.delete(name="web", namespace="default")
    with pytest.raises(NotFoundError):
        deploys.get(name="web", namespace="default")
    assert pods.get(namespace="default", label_selector="app=web").items == []


def test_nodes_carry_capacity_and_topology(start_sim: Any) -> None:
    sim = start_sim(nodes=2, node_cpu="4", node_memory="16Gi", node_gpu=1, region="r1", zone="z1")
    nodes = _dynamic(sim).resources.get(api_version="v1", kind="Node").get().items
    assert [n.metadata.name for n in nodes] == ["member1-node-0", "member1-node-1"]
    node = nodes[0]
    assert node.metadata.labels["topology.kubernetes.io/region"] == "r1"
    assert node.metadata.labels["topology.kubernetes.io/zone"] == "z1"
    assert node.status.allocatable["cpu"] == "4"
    assert node.status.allocatable["memory"] == "16Gi"
    assert node.status.allocatable["nvidia.com/gpu"] == "1"
    assert node.status.allocatable["pods"] == "110"


def test_deployment_too_big_stays_partly_unavailable(start_sim: Any) -> None:
    sim = start_sim(nodes=2, node_cpu="2")
    deploys = _deployments(sim)
    deploys.server_side_apply(body=deployment("big", 5, cpu="1"), field_manager="federation")
    status = wait_for(
        lambda: (s := deploys.get(name="big", namespace="default").status).readyReplicas == 4 and s
    )
    assert status.replicas == 5
    assert status.availableReplicas == 4
    assert status.unavailableReplicas == 1
    pods = _dynamic(sim).resources.get(api_version="v1", kind="Pod").get(namespace="default").items
    pending = [p for p in pods if p.status.phase == "Pending"]
    assert len(pending) == 1
    assert "Insufficient cpu" in pending[0].status.conditions[0].message
    # Scaling down frees room: the pending pod is bound or removed and everything becomes ready.
    deploys.patch(
        name="big",
        namespace="default",
        body={"spec": {"replicas": 4}},
        content_type="application/merge-patch+json",
    )
    wait_for(lambda: deploys.get(name="big", namespace="default").status.unavailableReplicas is None)


def test_a_pod_left_pending_is_bound_once_another_workload_frees_room(start_sim: Any) -> None:
    """The pending pod is not the one written when room frees (another workload's pod is deleted): the
    scheduler still tries it, and it is bound; new pods written meanwhile, with no room, stay pending."""
    sim = start_sim(nodes=2, node_cpu="2")
    deploys = _deployments(sim)
    deploys.server_side_apply(body=deployment("first", 4, cpu="1"), field_manager="federation")
    wait_for(lambda: deploys.get(name="first", namespace="default").status.readyReplicas == 4)
    deploys.server_side_apply(body=deployment("second", 1, cpu="1"), field_manager="federation")
    deploys.server_side_apply(body=deployment("third", 1, cpu="1"), field_manager="federation")
    pods = _dynamic(sim).resources.get(api_version="v1", kind="Pod")

    def phases(name: str) -> list[str]:
        owned = pods.get(namespace="default", label_selector=f"app={name}").items
        return sorted(p.status.phase for p in owned)

    assert phases("second") == ["Pending"] and phases("third") == ["Pending"]
    deploys.patch(
        name="first",
        namespace="default",
        body={"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
    )
    wait_for(lambda: deploys.get(name="second", namespace="default").status.readyReplicas == 1)
    assert phases("third") == ["Pending"]  # one freed slot: the older pending pod took it


def test_typed_client_crud_and_errors(sim: RunningSimulator) -> None:
    api = k8s.CoreV1Api(kconfig.new_client_from_config_dict(sim.kubeconfig))
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"tier": "a"}},
        "data": {"k": "v"},
    }
    created = api.create_namespaced_config_map("default", body)
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_config_map("default", body)
    assert exc.value.status == 409 and '"reason":"AlreadyExists"' in exc.value.body.replace(" ", "")
    with pytest.raises(ApiException) as exc:
        api.read_namespaced_config_map("missing", "default")
    assert exc.value.status == 404
    stale = dict(body, metadata={"name": "cm", "resourceVersion": "1"})
    with pytest.raises(ApiException) as exc:
        api.replace_namespaced_config_map("cm", "default", stale)
    assert exc.value.status == 409
    fresh = dict(
        body,
        metadata={
            "name": "cm",
            "labels": {"tier": "a"},
            "resourceVersion": created.metadata.resource_version,
        },
        data={"k": "w"},
    )
    assert api.replace_namespaced_config_map("cm", "default", fresh).data == {"k": "w"}
    assert [
        c.metadata.name for c in api.list_namespaced_config_map("default", label_selector="tier=a").items
    ] == ["cm"]
    assert api.list_namespaced_config_map("default", label_selector="tier=b").items == []
    assert len(api.list_namespaced_config_map("default", field_selector="metadata.name=cm").items) == 1
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_config_map("nowhere", body)
    assert exc.value.status == 404


def test_patch_types(sim: RunningSimulator) -> None:
    deploys = _deployments(sim)
    deploys.create(body=deployment("p", 1), namespace="default")
    merge = deploys.patch(
        name="p",
        namespace="default",
        body={"metadata": {"labels": {"x": "1"}}},
        content_type="application/merge-patch+json",
    )
    assert merge.metadata.labels.x == "1" and merge.metadata.generation == 1
    strategic = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}
    patched = deploys.patch(
        name="p", namespace="default", body=strategic, content_type="application/strategic-merge-patch+json"
    )
    names = [c.name for c in patched.spec.template.spec.containers]
    assert names == ["app", "side"] and patched.metadata.generation == 2
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    assert (
        deploys.patch(
            name="p", namespace="default", body=ops, content_type="application/json-patch+json"
        ).spec.replicas
        == 2
    )


def test_apply_conflict_without_force(sim: RunningSimulator) -> None:
    deploys = _deployments(sim)
    deploys.server_side_apply(body=deployment("c", 1), field_manager="alice")
    with pytest.raises(ConflictError) as exc:
        deploys.server_side_apply(body=deployment("c", 2), field_manager="bob")
    assert ".spec.replicas" in str(exc.value.body)
    forced = deploys.server_side_apply(body=deployment("c", 2), field_manager="bob", force_conflicts=True)
    assert forced.spec.replicas == 2
    managers = {m.manager for m in forced.metadata.managedFields}
    assert managers == {"alice", "bob"}


def test_invalid_deployment_is_422(sim: RunningSimulator) -> None:
    bad = deployment("bad", 1)
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(UnprocessibleEntityError):
        _deployments(sim).create(body=bad, namespace="default")


def test_wrong_token_is_401(sim: RunningSimulator) -> None:
    api = k8s.CoreV1Api(
        kconfig.new_client_from_config_dict(
            {**sim.kubeconfig, "users": [{"name": "member1", "user": {"token": "wrong"}}]}
        )
    )
    with pytest.raises(ApiException) as exc:
        api.list_node()
    assert exc.value.status == 401
    assert '"reason":"Unauthorized"' in exc.value.body.replace(" ", "")


def test_unknown_kinds_are_stored_as_is(sim: RunningSimulator) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    dyn = _dynamic(sim)
    dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition").create(body=crd)
    widgets = _dynamic(sim).resources.get(api_version="example.com/v1", kind="Widget")
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 3},
        "status": {"phase": "Done"},
    }
    widgets.server_side_apply(body=widget, namespace="default", field_manager="federation")
    got = widgets.get(name="w", namespace="default")
    assert got.spec.size == 3 and got.status.phase == "Done"
    with pytest.raises(ApiException) as exc:  # custom resources take no strategic merge patch
        widgets.patch(
            name="w",
            namespace="default",
            body={"spec": {"size": 4}},
            content_type="application/strategic-merge-patch+json",
        )
    assert exc.value.status == 415
    merged = widgets.patch(
        name="w", namespace="default", body={"spec": {"size": 4}}, content_type="application/merge-patch+json"
    )
    assert merged.spec.size == 4


def test_a_paged_list_by_label_returns_each_selected_object_once_with_its_status(
    sim: RunningSimulator,
) -> None:
    """``limit``/``continue`` over namespaces, a label selector and a field selector: the pages are cut
    before status is rendered (labels are not rendered), so each page must still carry its status."""
    core, apps = k8s.CoreV1Api(_api(sim)), k8s.AppsV1Api(_api(sim))
    for namespace in ("a", "b"):
        core.create_namespace({"metadata": {"name": namespace}})
    deploys = _deployments(sim)
    names = [(ns, f"web{i}") for ns in ("a", "b") for i in range(3)]
    for namespace, name in names:
        body = deployment(name, 1, namespace=namespace)
        body["metadata"]["labels"]["tier"] = "front" if name != "web1" else "back"
        deploys.server_side_apply(body=body, field_manager="federation", force_conflicts=True)
    wait_for(
        lambda: all(d.status.ready_replicas == 1 for d in apps.list_deployment_for_all_namespaces().items),
        what="every Deployment ready",
    )

    seen, token, remaining = [], None, []
    while True:
        page = apps.list_deployment_for_all_namespaces(label_selector="tier=front", limit=2, _continue=token)
        seen += [(d.metadata.namespace, d.metadata.name, d.status.ready_replicas) for d in page.items]
        token = page.metadata._continue
        if not token:
            break
        remaining.append(page.metadata.remaining_item_count)
    assert seen == [(ns, name, 1) for ns, name in names if name != "web1"]
    assert remaining == [2]  # 4 selected: a page of 2, then the last 2

    running = core.list_pod_for_all_namespaces(field_selector="status.phase=Running", limit=4)
    assert len(running.items) == 4 and running.metadata.remaining_item_count == 2
    assert all(p.status.phase == "Running" for p in running.items)


def test_a_paged_list_resumes_after_its_last_object_and_keeps_its_first_pages_version(
    sim: RunningSimulator,
) -> None:
    """An object deleted between two pages does not make the next page skip one (the continuation is a
    key, not an offset), and every page reports the first page's resourceVersion: a WATCH from it then
    shows the deletion, and nothing is lost."""
    core = k8s.CoreV1Api(_api(sim))
    for index in range(6):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm{index}"}})
    first = core.list_namespaced_config_map("default", limit=3)
    assert [c.metadata.name for c in first.items] == ["cm0", "cm1", "cm2"]
    core.delete_namespaced_config_map("cm0", "default")
    core.create_namespaced_config_map("default", {"metadata": {"name": "other"}})
    rest = core.list_namespaced_config_map("default", limit=3, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["cm3", "cm4", "cm5"]
    assert rest.metadata.resource_version == first.metadata.resource_version
    with pytest.raises(k8s.ApiException) as bad:
        core.list_namespaced_config_map("default", limit=3, _continue="not-a-token")
    assert bad.value.status == 400


def _api(sim: RunningSimulator) -> k8s.ApiClient:
    return kconfig.new_client_from_config_dict(sim.kubeconfig)
