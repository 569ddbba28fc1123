"""PATCH over real HTTP: the four patch types, server-side apply ownership, status, and identity defaults."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.api import manifests as m
from tests.conftest import start_server

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
NGINX = f"{DEPLOYMENTS}/nginx"
POLICY = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies/nginx-propagation"
WIDGET = "/apis/example.io/v1/namespaces/default/widgets/w1"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def _created(http: Any, path: str, manifest: dict[str, Any]) -> dict[str, Any]:
    answer = http.post(path.rsplit("/", 1)[0], json=manifest)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"].get("managedFields", [])}


def test_merge_json_and_strategic_patches_of_a_deployment(federation_server) -> None:
    with federation_server.client() as http:
        created = _created(http, NGINX, m.DEPLOYMENT)
        merged = http.patch(
            NGINX, params={"fieldManager": "tuner"}, headers=MERGE, json={"spec": {"replicas": 4}}
        )
        assert merged.status_code == 200, merged.text
        body = merged.json()
        assert body["spec"]["replicas"] == 4
        assert body["metadata"]["generation"] == created["metadata"]["generation"] + 1
        assert int(body["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
        assert "f:replicas" in _managers(body)[("tuner", "Update")]["f:spec"]

        ops = [{"op": "replace", "path": "/spec/replicas", "value": 1}]
        assert http.patch(NGINX, headers=JSON_PATCH, json=ops).json()["spec"]["replicas"] == 1

        sidecar = {"name": "sidecar", "image": "busybox"}
        patch = {"spec": {"template": {"spec": {"containers": [sidecar]}}}}
        strategic = http.patch(NGINX, headers=STRATEGIC, json=patch)
        assert strategic.status_code == 200, strategic.text
        names = [c["name"] for c in strategic.json()["spec"]["template"]["spec"]["containers"]]
        assert names == ["nginx", "sidecar"]  # merged by name, not replaced
        replaced = http.patch(NGINX, headers=MERGE, json=patch).json()
        assert [c["name"] for c in replaced["spec"]["template"]["spec"]["containers"]] == ["sidecar"]


def test_patch_errors_are_kubernetes_statuses(federation_server) -> None:
    with federation_server.client() as http:
        live = _created(http, NGINX, m.DEPLOYMENT)
        failed_test = http.patch(
            NGINX, headers=JSON_PATCH, json=[{"op": "test", "path": "/spec/replicas", "value": 9}]
        )
        assert failed_test.status_code == 422 and failed_test.json()["reason"] == "Invalid"
        missing = http.patch(f"{DEPLOYMENTS}/absent", headers=MERGE, json={"spec": {"replicas": 1}})
        assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
        invalid = http.patch(NGINX, headers=MERGE, json={"spec": {"replicas": "many"}})
        assert invalid.status_code == 422, invalid.text
        assert invalid.json()["details"]["causes"][0]["field"] == "spec.replicas"
        stale = {"metadata": {"resourceVersion": "999"}, "spec": {"replicas": 3}}
        assert http.patch(NGINX, headers=MERGE, json=stale).json()["reason"] == "Conflict"
        unknown = http.patch(NGINX, headers={"Content-Type": "text/plain"}, content=b"replicas=3")
        assert unknown.status_code == 415 and unknown.json()["reason"] == "UnsupportedMediaType"
        kind = http.patch(NGINX, headers=MERGE, json={"kind": "StatefulSet"})
        assert kind.status_code == 400
        force = http.patch(NGINX, params={"force": "true"}, headers=MERGE, json={})
        assert force.status_code == 400
        after = http.get(NGINX).json()
        assert after["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]  # nothing written


def test_strategic_merge_patch_of_custom_resources_is_unsupported_media_type(federation_server) -> None:
    with federation_server.client() as http:
        _created(http, POLICY, m.PROPAGATION_POLICY)
        assert http.post(m.CRDS_PATH, json=m.WIDGET_CRD).status_code == 201
        _created(http, WIDGET, m.CUSTOM_RESOURCE)
        for path in (POLICY, WIDGET):
            answer = http.patch(path, headers=STRATEGIC, json={"metadata": {"labels": {"a": "b"}}})
            assert answer.status_code == 415, answer.text
            assert answer.json()["reason"] == "UnsupportedMediaType"
            assert "application/merge-patch+json" in answer.json()["message"]
            merged = http.patch(path, headers=MERGE, json={"metadata": {"labels": {"a": "b"}}})
            assert merged.status_code == 200 and merged.json()["metadata"]["labels"]["a"] == "b"


def _apply(http: Any, manager: str, manifest: dict[str, Any], force: bool = False) -> Any:
    params = {"fieldManager": manager, "force": "true" if force else "false"}
    return http.patch(NGINX, params=params, headers=APPLY, json=manifest)


@pytest.fixture
def api_server(tmp_path, database_url):
    """The server on each backend (apply's precondition and no-op write are the store's business)."""
    running = start_server(tmp_path, database_url)
    try:
        yield running
    finally:
        running.process.stop()


def test_server_side_apply_creates_is_idempotent_and_guards_ownership(api_server) -> None:
    with api_server.client() as http:
        created = _apply(http, "ci", m.DEPLOYMENT)
        assert created.status_code == 201, created.text
        assert ("ci", "Apply") in _managers(created.json())
        again = _apply(http, "ci", m.DEPLOYMENT)
        assert again.status_code == 200, again.text
        assert again.json()["metadata"] == created.json()["metadata"]  # same resourceVersion, same times

        scaled = copy.deepcopy(m.DEPLOYMENT)
        scaled["spec"]["replicas"] = 7
        conflict = _apply(http, "ops", scaled)
        assert conflict.status_code == 409, conflict.text
        status = conflict.json()
        assert status["reason"] == "Conflict"
        assert status["details"]["causes"] == [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "ci" using apps/v1',
                "field": ".spec.replicas",
            }
        ]
        assert http.get(NGINX).json()["spec"]["replicas"] == 2

        forced = _apply(http, "ops", scaled, force=True)
        assert forced.status_code == 200, forced.text
        assert forced.json()["spec"]["replicas"] == 7
        owners = _managers(forced.json())
        assert "f:replicas" in owners[("ops", "Apply")]["f:spec"]
        assert "f:replicas" not in owners[("ci", "Apply")]["f:spec"]


def test_apply_takes_yaml_and_refuses_what_it_must(federation_server) -> None:
    config = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: default\n"
        "data:\n  when: 2024-01-01\n  flag: 'on'\n"
    )
    path = "/api/v1/namespaces/default/configmaps/cfg"
    with federation_server.client() as http:
        applied = http.patch(path, params={"fieldManager": "ci"}, headers=APPLY, content=config.encode())
        assert applied.status_code == 201, applied.text
        assert applied.json()["data"] == {"when": "2024-01-01", "flag": "on"}
        no_manager = http.patch(path, headers=APPLY, content=config.encode())
        assert no_manager.status_code == 400 and "fieldManager" in no_manager.json()["message"]
        alias = "a: &x [1, 2]\nb: *x\n"
        aliased = http.patch(path, params={"fieldManager": "ci"}, headers=APPLY, content=alias.encode())
        assert aliased.status_code == 400 and "aliases" in aliased.json()["message"]
        not_a_number = "data:\n  x: .nan\n"
        nan = http.patch(path, params={"fieldManager": "ci"}, headers=APPLY, content=not_a_number.encode())
        assert nan.status_code == 400 and nan.json()["reason"] == "BadRequest"
        strict = http.patch(path, headers=MERGE, content=b'{"data": {"x": NaN}}')
        assert strict.status_code == 400 and strict.json()["reason"] == "BadRequest"


def test_status_patch_writes_status_only(federation_server) -> None:
    cluster = "/apis/cluster.karmada.io/v1alpha1/clusters/member1"
    with federation_server.client() as http:
        created = _created(http, cluster, m.CLUSTER)
        patch = {"status": {"kubernetesVersion": "v1.31.0"}, "spec": {"region": "elsewhere"}}
        answer = http.patch(f"{cluster}/status", headers=MERGE, json=patch)
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"]["kubernetesVersion"] == "v1.31.0"
        assert answer.json()["spec"] == created["spec"]
        applied = http.patch(f"{cluster}/status", params={"fieldManager": "x"}, headers=APPLY, json=patch)
        assert applied.status_code == 415


def test_scale_subresource(federation_server) -> None:
    with federation_server.client() as http:
        _created(http, NGINX, m.DEPLOYMENT)
        scale = http.get(f"{NGINX}/scale").json()
        assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
        assert scale["spec"] == {"replicas": 2}
        assert scale["status"]["selector"] == "app=nginx"

        scale["spec"]["replicas"] = 3
        put = http.put(f"{NGINX}/scale", json=scale)
        assert put.status_code == 200, put.text
        assert put.json()["spec"]["replicas"] == 3
        stale = http.put(f"{NGINX}/scale", json=scale)  # the resourceVersion it carried is gone now
        assert stale.status_code == 409

        patched = http.patch(f"{NGINX}/scale", headers=MERGE, json={"spec": {"replicas": 5}})
        assert patched.status_code == 200, patched.text
        assert http.get(NGINX).json()["spec"]["replicas"] == 5
        negative = http.patch(f"{NGINX}/scale", headers=MERGE, json={"spec": {"replicas": -1}})
        assert (
            negative.status_code == 422
            and negative.json()["details"]["causes"][0]["field"] == "spec.replicas"
        )
        assert http.get("/api/v1/namespaces/default/configmaps/x/scale").status_code == 404

        resources = http.get("/apis/apps/v1").json()["resources"]
        entry = next(r for r in resources if r["name"] == "deployments/scale")
        assert (entry["group"], entry["version"], entry["kind"]) == ("autoscaling", "v1", "Scale")
        assert "patch" in next(r for r in resources if r["name"] == "deployments")["verbs"]


def test_bodies_without_api_version_and_kind_take_them_from_the_url(federation_server) -> None:
    bare = {k: v for k, v in m.CONFIGMAP.items() if k not in ("apiVersion", "kind")}
    path = "/api/v1/namespaces/default/configmaps"
    with federation_server.client() as http:
        created = http.post(path, json=bare)
        assert created.status_code == 201, created.text
        assert (created.json()["apiVersion"], created.json()["kind"]) == ("v1", "ConfigMap")
        replaced = http.put(f"{path}/cfg", json={**bare, "data": {"a": "2"}})
        assert replaced.status_code == 200 and replaced.json()["kind"] == "ConfigMap"
        wrong = http.put(f"{path}/cfg", json={**bare, "apiVersion": "apps/v1", "kind": "Deployment"})
        assert wrong.status_code == 400 and wrong.json()["reason"] == "BadRequest"


def test_viewers_cannot_patch(federation_server) -> None:
    with federation_server.client() as http:
        _created(http, NGINX, m.DEPLOYMENT)
    with federation_server.client(federation_server.create_token("viewer")) as http:
        denied = http.patch(NGINX, headers=MERGE, json={"spec": {"replicas": 1}})
        assert denied.status_code == 403
        assert http.get(f"{NGINX}/scale").status_code == 200
