"""Table answers and the Kubernetes OpenAPI documents over real HTTP: a built-in kind, Karmada's kinds and
a kind an applied CRD defines (with its own printer columns and schema)."""

from __future__ import annotations

import copy

from tests.api import manifests as m

TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"
TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
KUBECTL_ACCEPT = f"{TABLE_V1},{TABLE_V1BETA1},application/json"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
GADGETS = "/apis/example.io/v1/namespaces/default/gadgets"
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.io"},
    "spec": {
        "group": "example.io",
        "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "A gadget.",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"size": {"type": "integer", "description": "How big."}},
                            }
                        },
                    }
                },
            }
        ],
    },
}
GADGET = {"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"size": 4}}


def columns(table: dict) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"]]


def test_lists_and_gets_are_tables_when_asked(federation_server):
    with federation_server.client() as http:
        assert http.post(DEPLOYMENTS, json=m.DEPLOYMENT).status_code == 201
        assert http.post(POLICIES, json=m.PROPAGATION_POLICY).status_code == 201
        answer = http.get(DEPLOYMENTS, headers={"Accept": KUBECTL_ACCEPT})
        assert answer.status_code == 200 and answer.headers["content-type"] == TABLE_V1
        table = answer.json()
        assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
        assert columns(table)[:5] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
        [row] = table["rows"]
        assert row["cells"][:4] == ["nginx", "0/2", 0, 0]
        assert (
            row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["name"] == "nginx"
        )

        one = http.get(f"{POLICIES}/nginx-propagation", headers={"Accept": TABLE_V1BETA1}).json()
        assert one["apiVersion"] == "meta.k8s.io/v1beta1"
        assert columns(one) == ["Name", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"]
        assert one["rows"][0]["cells"][0] == "nginx-propagation"
        assert one["metadata"]["resourceVersion"] == one["rows"][0]["object"]["metadata"]["resourceVersion"]

        full = http.get(DEPLOYMENTS, params={"includeObject": "Object"}, headers={"Accept": TABLE_V1}).json()
        assert full["rows"][0]["object"]["spec"]["replicas"] == 2
        bare = http.get(DEPLOYMENTS, params={"includeObject": "None"}, headers={"Accept": TABLE_V1}).json()
        assert "object" not in bare["rows"][0]
        assert (
            http.get(DEPLOYMENTS, params={"includeObject": "All"}, headers={"Accept": TABLE_V1}).status_code
            == 400
        )

        plain = http.get(DEPLOYMENTS, headers={"Accept": f"application/json,{TABLE_V1}"}).json()
        assert plain["kind"] == "DeploymentList"  # the first acceptable type wins
        assert http.get(DEPLOYMENTS).json()["kind"] == "DeploymentList"


def test_a_crd_kind_prints_its_own_columns(federation_server):
    with federation_server.client() as http:
        assert http.post(m.CRDS_PATH, json=GADGET_CRD).status_code == 201
        assert http.post(GADGETS, json=GADGET).status_code == 201
        table = http.get(GADGETS, headers={"Accept": KUBECTL_ACCEPT}).json()
        assert columns(table) == ["Name", "Size", "Phase", "Age"]
        assert [c["priority"] for c in table["columnDefinitions"]] == [0, 0, 1, 0]
        assert table["rows"][0]["cells"][:3] == ["g1", 4, None]
        crds = http.get(m.CRDS_PATH, headers={"Accept": TABLE_V1}).json()
        assert columns(crds) == ["Name", "Created At"]


def test_paged_table_keeps_the_continue_token(federation_server):
    base = "/api/v1/namespaces/default/configmaps"
    with federation_server.client() as http:
        for i in range(3):
            body = copy.deepcopy(m.CONFIGMAP)
            body["metadata"]["name"] = f"cfg-{i}"
            assert http.post(base, json=body).status_code == 201
        page = http.get(base, params={"limit": 2}, headers={"Accept": TABLE_V1}).json()
        assert len(page["rows"]) == 2 and page["metadata"]["continue"]
        rest = http.get(base, params={"continue": page["metadata"]["continue"]}, headers={"Accept": TABLE_V1})
        assert [r["cells"][0] for r in rest.json()["rows"]] == ["cfg-2"]


def test_openapi_v3_describes_every_served_kind(federation_server):
    with federation_server.client() as http:
        index = http.get("/openapi/v3").json()["paths"]
        assert {
            "api/v1",
            "apis/apps/v1",
            "apis/policy.karmada.io/v1alpha1",
            "apis/work.karmada.io/v1alpha2",
        } <= set(index)
        url = index["apis/policy.karmada.io/v1alpha1"]["serverRelativeURL"]
        assert url.startswith("/openapi/v3/apis/policy.karmada.io/v1alpha1?hash=")
        document = http.get(url).json()
        schema = document["components"]["schemas"]["io.karmada.policy.v1alpha1.PropagationPolicy"]
        assert schema["x-kubernetes-group-version-kind"][0]["kind"] == "PropagationPolicy"
        assert http.get("/openapi/v3/apis/nothing.io/v1").status_code == 404

        assert "apis/example.io/v1" not in index
        assert http.post(m.CRDS_PATH, json=GADGET_CRD).status_code == 201
        after = http.get("/openapi/v3").json()["paths"]
        assert (
            after["apis/policy.karmada.io/v1alpha1"] == index["apis/policy.karmada.io/v1alpha1"]
        )  # same hash
        gadget = http.get(after["apis/example.io/v1"]["serverRelativeURL"]).json()["components"]["schemas"]
        assert (
            gadget["io.example.v1.Gadget"]["properties"]["spec"]["properties"]["size"]["description"]
            == "How big."
        )


def test_openapi_v2_is_json_and_needs_a_token(federation_server):
    with federation_server.client() as http:
        swagger = http.get("/openapi/v2", headers={"Accept": "application/json"}).json()
        assert swagger["swagger"] == "2.0"
        assert "io.karmada.policy.v1alpha1.PropagationPolicy" in swagger["definitions"]
        patch = swagger["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
        assert "application/merge-patch+json" in patch["consumes"]
        protobuf = http.get(
            "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
        )
        assert protobuf.status_code == 406 and protobuf.json()["reason"] == "NotAcceptable"
    with federation_server.client(token="not-a-token") as anonymous:
        assert anonymous.get("/openapi/v3").status_code == 401
        assert anonymous.get("/openapi/v2").status_code == 401
