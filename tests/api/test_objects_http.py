"""The API over real HTTP: every kind round-trips; Kubernetes conventions hold."""

from __future__ import annotations

import copy

import pytest

from tests.api import manifests as m

PATHS = {
    "PropagationPolicy": "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies",
    "ClusterPropagationPolicy": "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies",
    "WorkloadRebalancer": "/apis/apps.karmada.io/v1alpha1/workloadrebalancers",
    "Cluster": "/apis/cluster.karmada.io/v1alpha1/clusters",
    "WorkloadPolicy": "/apis/kosmos.io/v1alpha1/namespaces/default/workloadpolicies",
    "Deployment": "/apis/apps/v1/namespaces/default/deployments",
    "ConfigMap": "/api/v1/namespaces/default/configmaps",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "Widget": "/apis/example.io/v1/namespaces/default/widgets",
}
OBJECTS = [
    m.PROPAGATION_POLICY,
    m.CLUSTER_PROPAGATION_POLICY,
    m.WORKLOAD_REBALANCER,
    m.CLUSTER,
    m.WORKLOAD_POLICY,
    m.DEPLOYMENT,
    m.CONFIGMAP,
    m.CLUSTER_ROLE,
    m.CUSTOM_RESOURCE,
]


def _desired(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _user_owned(obj: dict) -> dict:
    """The object without what a controller may write between two reads (status, so resourceVersion):
    the rebalancer controller reports on a WorkloadRebalancer as soon as it is created."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**_desired(obj), "apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta}


@pytest.mark.parametrize("manifest", OBJECTS, ids=lambda o: o["kind"])
def test_every_kind_round_trips(federation_server, manifest):
    base = PATHS[manifest["kind"]]
    name = manifest["metadata"]["name"]
    with federation_server.client() as http:
        if manifest is m.CUSTOM_RESOURCE:  # a custom kind is served once its CRD is applied
            assert http.post(m.CRDS_PATH, json=m.WIDGET_CRD).status_code == 201
        created = http.post(base, json=manifest)
        assert created.status_code == 201, created.text
        body = created.json()
        assert _desired(body) == _desired(manifest)
        meta = body["metadata"]
        assert int(meta["resourceVersion"]) > 0 and meta["generation"] == 1 and meta["uid"]
        assert meta["creationTimestamp"].endswith("Z")

        fetched = http.get(f"{base}/{name}").json()
        assert _user_owned(fetched) == _user_owned(body)
        listed = http.get(base).json()
        assert listed["kind"] == f"{manifest['kind']}List"
        assert [i["metadata"]["name"] for i in listed["items"]] == [name]

        deleted = http.delete(f"{base}/{name}")
        assert deleted.status_code == 200
        assert http.get(f"{base}/{name}").status_code == 404


def test_spec_change_bumps_generation_metadata_change_does_not(federation_server):
    base = PATHS["Deployment"]
    with federation_server.client() as http:
        created = http.post(base, json=m.DEPLOYMENT).json()
        relabelled = copy.deepcopy(created)
        relabelled["metadata"]["labels"]["tier"] = "web"
        after_labels = http.put(f"{base}/nginx", json=relabelled).json()
        assert after_labels["metadata"]["generation"] == 1
        assert int(after_labels["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
        scaled = copy.deepcopy(after_labels)
        scaled["spec"]["replicas"] = 5
        after_scale = http.put(f"{base}/nginx", json=scaled).json()
        assert after_scale["metadata"]["generation"] == 2


def test_put_creates_when_absent(federation_server):
    with federation_server.client() as http:
        answer = http.put(f"{PATHS['ConfigMap']}/cfg", json=m.CONFIGMAP)
        assert answer.status_code == 201


def test_users_cannot_write_status(federation_server):
    base = PATHS["Cluster"]
    with federation_server.client() as http:
        sneaky = {**m.CLUSTER, "status": {"kubernetesVersion": "v1.99"}}
        created = http.post(base, json=sneaky).json()
        assert "kubernetesVersion" not in (created.get("status") or {})
        status = http.put(f"{base}/member1/status", json={"status": {"kubernetesVersion": "v1.30.0"}})
        assert status.status_code == 200, status.text
        current = http.get(f"{base}/member1").json()
        replaced = http.put(f"{base}/member1", json={**current, "status": {"kubernetesVersion": "v0"}}).json()
        assert replaced["status"]["kubernetesVersion"] == "v1.30.0"


def test_status_bodies(federation_server):
    base = PATHS["PropagationPolicy"]
    with federation_server.client() as http:
        missing = http.get(f"{base}/nope")
        assert missing.status_code == 404
        assert missing.json() | {"details": None} == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'propagationpolicies.policy.karmada.io "nope" not found',
            "reason": "NotFound",
            "code": 404,
            "details": None,
        }
        assert http.post(base, json=m.PROPAGATION_POLICY).status_code == 201
        again = http.post(base, json=m.PROPAGATION_POLICY)
        assert again.status_code == 409 and again.json()["reason"] == "AlreadyExists"
        wrong_kind = http.post(base, json={**m.PROPAGATION_POLICY, "kind": "Deployment"})
        assert wrong_kind.status_code == 400 and wrong_kind.json()["reason"] == "BadRequest"


def test_invalid_object_lists_every_bad_field_and_stores_nothing(federation_server):
    bad = copy.deepcopy(m.PROPAGATION_POLICY)
    placement = bad["spec"]["placement"]
    placement["spreadConstraints"] = [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 2}]
    placement["clusterTolerations"] = [{"key": "k", "operator": "Exists", "value": "v"}]
    placement["clusterAffinity"]["fieldSelector"] = {
        "matchExpressions": [{"key": "color", "operator": "In", "values": ["red"]}]
    }
    base = PATHS["PropagationPolicy"]
    with federation_server.client() as http:
        answer = http.post(base, json=bad)
        assert answer.status_code == 422
        body = answer.json()
        assert body["reason"] == "Invalid"
        fields = {c["field"] for c in body["details"]["causes"]}
        assert fields == {
            "spec.placement.spreadConstraints[0].maxGroups",
            "spec.placement.clusterTolerations[0].value",
            "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key",
        }
        assert http.get(f"{base}/nginx-propagation").status_code == 404


def test_auth_401_and_403(federation_server):
    base = PATHS["ConfigMap"]
    viewer = federation_server.create_token("viewer")
    agent = federation_server.create_token("agent", cluster="member1")
    with federation_server.client(token="fed_wrong") as http:
        denied = http.get(base)
        assert denied.status_code == 401 and denied.json()["reason"] == "Unauthorized"
    with federation_server.client() as http:
        http.headers.pop("Authorization")
        assert http.get(base).status_code == 401
        assert http.get("/healthz").status_code == 200
        assert http.get("/readyz").text == "ok"
    with federation_server.client(token=viewer) as http:
        assert http.get(base).status_code == 200
        refused = http.post(base, json=m.CONFIGMAP)
        assert refused.status_code == 403 and refused.json()["reason"] == "Forbidden"
    with federation_server.client(token=agent) as http:
        own = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member1/works"
        other = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member2/works"
        assert http.get(own).status_code == 200
        assert http.get(other).status_code == 403
        assert http.get(base).status_code == 403


def test_pagination_and_label_selectors(federation_server):
    base = PATHS["ConfigMap"]
    with federation_server.client() as http:
        for i in range(7):
            cm = {
                **m.CONFIGMAP,
                "metadata": {"name": f"cm-{i}", "labels": {"parity": "even" if i % 2 == 0 else "odd"}},
            }
            assert http.post(base, json=cm).status_code == 201
        names, token = [], None
        while True:
            params = {"limit": 3, **({"continue": token} if token else {})}
            page = http.get(base, params=params).json()
            assert len(page["items"]) <= 3
            names += [i["metadata"]["name"] for i in page["items"]]
            token = page["metadata"].get("continue")
            if not token:
                break
        assert names == [f"cm-{i}" for i in range(7)]
        even = http.get(base, params={"labelSelector": "parity=even", "limit": 2}).json()
        assert [i["metadata"]["name"] for i in even["items"]] == ["cm-0", "cm-2"]
        rest = http.get(
            base, params={"labelSelector": "parity=even", "continue": even["metadata"]["continue"]}
        )
        assert [i["metadata"]["name"] for i in rest.json()["items"]] == ["cm-4", "cm-6"]
        assert http.get(base, params={"labelSelector": "parity in (odd"}).status_code == 400
        assert http.get(base, params={"continue": "garbage"}).status_code == 400


def test_stale_resource_version_is_a_conflict(federation_server):
    base = PATHS["Deployment"]
    with federation_server.client() as http:
        created = http.post(base, json=m.DEPLOYMENT).json()
        first = copy.deepcopy(created)
        first["spec"]["replicas"] = 3
        assert http.put(f"{base}/nginx", json=first).status_code == 200
        stale = copy.deepcopy(created)
        stale["spec"]["replicas"] = 4
        answer = http.put(f"{base}/nginx", json=stale)
        assert answer.status_code == 409 and answer.json()["reason"] == "Conflict"


def test_discovery(federation_server):
    with federation_server.client() as http:
        groups = {g["name"] for g in http.get("/apis").json()["groups"]}
        assert {
            "policy.karmada.io",
            "cluster.karmada.io",
            "work.karmada.io",
            "apps.karmada.io",
            "kosmos.io",
        } <= groups
        resources = http.get("/apis/work.karmada.io/v1alpha2").json()["resources"]
        short = {r["name"]: r.get("shortNames") for r in resources}
        assert short["resourcebindings"] == ["rb"]
        assert http.get("/api").json()["versions"] == ["v1"]
        assert "paths" in http.get("/openapi.json").json()
        assert http.get(f"{PATHS['Deployment']}/absent").status_code == 404
        metrics = http.get("/metrics").text
        assert 'federation_api_requests_total{code="404",method="GET"}' in metrics
        assert 'federation_api_request_duration_seconds_count{method="GET"}' in metrics
        assert http.get("/version").json()["gitVersion"].startswith("v")


def test_a_cluster_no_execute_taint_gets_its_time_added(federation_server):
    """Karmada's Cluster strategy stamps ``timeAdded`` on a NoExecute taint written without one (the taint
    manager counts tolerations from it, and never triggers on a taint that has none); another effect, and a
    taint that has one, are left as written."""
    cluster = copy.deepcopy(m.CLUSTER)
    cluster["metadata"]["name"] = "tainted"
    given = "2026-01-02T03:04:05Z"
    cluster["spec"]["taints"] = [
        {"key": "maintenance", "effect": "NoExecute"},
        {"key": "kept", "effect": "NoExecute", "timeAdded": given},
        {"key": "soft", "effect": "NoSchedule"},
    ]
    base = PATHS["Cluster"]
    with federation_server.client() as http:
        created = http.post(base, json=cluster)
        assert created.status_code == 201, created.text
        taints = {t["key"]: t for t in created.json()["spec"]["taints"]}
        assert taints["maintenance"]["timeAdded"].endswith("Z")
        assert taints["kept"]["timeAdded"] == given
        assert "timeAdded" not in taints["soft"]

        current = created.json()
        current["spec"]["taints"].append({"key": "later", "effect": "NoExecute"})
        replaced = http.put(f"{base}/tainted", json=current)
        assert replaced.status_code == 200, replaced.text
        taints = {t["key"]: t for t in replaced.json()["spec"]["taints"]}
        assert taints["later"]["timeAdded"].endswith("Z")
        assert taints["maintenance"]["timeAdded"] == current["spec"]["taints"][0]["timeAdded"]
