"""OpenAPI v3 documents built from our models: what kubectl explain and kubectl apply look for."""

from __future__ import annotations

import json
from typing import Any

from federation.model import kinds
from federation.model.openapi import ServedKind, group_version_document, schema_prefix, structural
from federation.model.policy import ClusterPropagationPolicy, PropagationPolicy

PP = kinds.lookup("pp")
CPP = kinds.lookup("cpp")
DEPLOY = kinds.lookup("deploy")


def policy_document() -> dict[str, Any]:
    served = [ServedKind(PP, PropagationPolicy), ServedKind(CPP, ClusterPropagationPolicy)]
    return group_version_document("policy.karmada.io", "v1alpha1", served)


def walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(found for value in node.values() for found in walk(value))]
    if isinstance(node, list):
        return [found for item in node for found in walk(item)]
    return []


def test_component_names_follow_kube_apiserver() -> None:
    assert schema_prefix("", "v1") == "io.k8s.api.core.v1"
    assert schema_prefix("apps", "v1") == "io.k8s.api.apps.v1"
    assert schema_prefix("networking.k8s.io", "v1") == "io.k8s.api.networking.v1"
    assert schema_prefix("policy.karmada.io", "v1alpha1") == "io.karmada.policy.v1alpha1"


def test_every_kind_has_a_schema_and_a_patch_operation_with_its_gvk() -> None:
    document = policy_document()
    schemas = document["components"]["schemas"]
    gvk = {"group": "policy.karmada.io", "kind": "PropagationPolicy", "version": "v1alpha1"}
    root = schemas["io.karmada.policy.v1alpha1.PropagationPolicy"]
    assert root["x-kubernetes-group-version-kind"] == [gvk]
    assert root["properties"]["apiVersion"]["type"] == "string"
    named = document["paths"][
        "/apis/policy.karmada.io/v1alpha1/namespaces/{namespace}/propagationpolicies/{name}"
    ]
    patch = named["patch"]
    assert patch["x-kubernetes-group-version-kind"] == gvk
    assert {"name": "fieldValidation", "in": "query"} in [
        {k: p[k] for k in ("name", "in")} for p in patch["parameters"]
    ]
    # kube-apiserver refuses strategic merge patch for Karmada's kinds: the document must not claim it.
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert "application/merge-patch+json" in patch["requestBody"]["content"]
    cluster_scoped = document["paths"]["/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies/{name}"]
    assert cluster_scoped["get"]["x-kubernetes-group-version-kind"]["kind"] == "ClusterPropagationPolicy"
    listing = document["paths"]["/apis/policy.karmada.io/v1alpha1/propagationpolicies"]["get"]
    assert listing["x-kubernetes-action"] == "list"


def test_schemas_are_openapi_3_0_that_kubectl_explain_can_walk() -> None:
    document = policy_document()
    nodes = walk(document["components"]["schemas"])
    assert not [n for n in nodes if "anyOf" in n or n.get("type") == "null" or "title" in n or "const" in n]
    refs = {n["$ref"] for n in nodes if "$ref" in n}
    assert all(r.removeprefix("#/components/schemas/") in document["components"]["schemas"] for r in refs)
    assert not [n for n in nodes if "$ref" in n and len(n) > 1]  # siblings of $ref go through allOf
    spec = document["components"]["schemas"]["io.karmada.policy.v1alpha1.PropagationSpec"]
    placement = spec["properties"]["placement"]
    assert placement["allOf"] == [{"$ref": "#/components/schemas/io.karmada.policy.v1alpha1.Placement"}]
    assert placement["description"].startswith("Which clusters")
    fields = document["components"]["schemas"]["io.karmada.policy.v1alpha1.Placement"]["properties"]
    assert "\n" not in fields["clusterAffinities"]["description"]  # one paragraph: kubectl wraps it
    assert fields["spreadConstraints"]["type"] == "array"
    strategy = document["components"]["schemas"]["io.karmada.policy.v1alpha1.ReplicaSchedulingStrategy"]
    assert strategy["properties"]["replicaSchedulingType"]["enum"] == ["Duplicated", "Divided", ""]
    assert json.dumps(document) == json.dumps(policy_document())  # deterministic: the index hashes it


def test_structural_conversion() -> None:
    renamed = {"Thing": "io.x.v1.Thing"}
    assert structural({"anyOf": [{"type": "integer"}, {"type": "string"}], "title": "T"}, renamed) == {
        "x-kubernetes-int-or-string": True
    }
    assert structural(
        {"anyOf": [{"$ref": "#/components/schemas/Thing"}, {"type": "null"}], "default": None}, renamed
    ) == {"$ref": "#/components/schemas/io.x.v1.Thing"}
    assert structural({"type": "object", "additionalProperties": True}, renamed) == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert structural({"const": "v1", "type": "string"}, renamed) == {"enum": ["v1"], "type": "string"}


def test_kinds_without_a_model_get_a_schema_that_keeps_their_fields() -> None:
    document = group_version_document("apps", "v1", [ServedKind(DEPLOY)])
    schema = document["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    crd_schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    }
    widget = kinds.KindInfo("example.io", "v1", "Widget", "widgets", "widget")
    custom = group_version_document("example.io", "v1", [ServedKind(widget, schema=crd_schema)])
    own = custom["components"]["schemas"]["io.example.v1.Widget"]
    assert own["properties"]["spec"]["properties"]["size"] == {"type": "integer"}
    assert own["properties"]["kind"]["type"] == "string"
