"""Admission over real HTTP: a built-in template or Karmada policy kube-apiserver would refuse is a 422
Invalid Status naming the field, nothing is stored, and the kind still lists; what it accepts is stored."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.api import manifests as m

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
CLUSTER_ROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
CONTAINER = "spec.template.spec.containers[0]"


def deployment(**changes: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(m.DEPLOYMENT)
    manifest["metadata"]["name"] = "bad"
    manifest["spec"].update(changes)
    return manifest


def with_requests(requests: Any) -> dict[str, Any]:
    manifest = deployment()
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": requests}
    return manifest


def with_weight(weight: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(m.PROPAGATION_POLICY)
    manifest["metadata"]["name"] = "bad"
    manifest["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"][0][
        "weight"
    ] = weight
    return manifest


def without_selectors() -> dict[str, Any]:
    manifest = copy.deepcopy(m.PROPAGATION_POLICY)
    manifest["metadata"]["name"] = "bad"
    manifest["spec"]["resourceSelectors"] = []
    return manifest


def job_without_restart_policy() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}},
    }


CASES = [
    ("replicas -1", DEPLOYMENTS, deployment(replicas=-1), "spec.replicas"),
    ("replicas -2^31", DEPLOYMENTS, deployment(replicas=-(2**31)), "spec.replicas"),
    ("replicas 2^63", DEPLOYMENTS, deployment(replicas=2**63), "spec.replicas"),
    ("replicas 1e30", DEPLOYMENTS, deployment(replicas=1e30), "spec.replicas"),
    ("replicas '3'", DEPLOYMENTS, deployment(replicas="3"), "spec.replicas"),
    ("replicas 1.5", DEPLOYMENTS, deployment(replicas=1.5), "spec.replicas"),
    ("replicas true", DEPLOYMENTS, deployment(replicas=True), "spec.replicas"),
    ("replicas a list", DEPLOYMENTS, deployment(replicas=[1]), "spec.replicas"),
    ("replicas 'abc'", DEPLOYMENTS, deployment(replicas="abc"), "spec.replicas"),
    ("cpu lots", DEPLOYMENTS, with_requests({"cpu": "lots"}), f"{CONTAINER}.resources.requests[cpu]"),
    ("requests a list", DEPLOYMENTS, with_requests(["cpu"]), f"{CONTAINER}.resources.requests"),
    (
        "containers a string",
        DEPLOYMENTS,
        deployment(template={"spec": {"containers": "abc"}}),
        "spec.template.spec.containers",
    ),
    ("spec a list", DEPLOYMENTS, {**deployment(), "spec": [1]}, "spec"),
    (
        "selector mismatch",
        DEPLOYMENTS,
        deployment(selector={"matchLabels": {"app": "x"}}),
        "spec.template.metadata.labels",
    ),
    ("no selector", DEPLOYMENTS, deployment(selector=None), "spec.selector"),
    ("bad name", DEPLOYMENTS, {**deployment(), "metadata": {"name": "Bad_Name"}}, "metadata.name"),
    ("job restartPolicy", JOBS, job_without_restart_policy(), "spec.template.spec.restartPolicy"),
    ("empty resourceSelectors", POLICIES, without_selectors(), "spec.resourceSelectors"),
    (
        "weight 1e30",
        POLICIES,
        with_weight(1e30),
        "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
    ),
    (
        "weight 2^63",
        POLICIES,
        with_weight(2**63),
        "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
    ),
]


@pytest.mark.parametrize(("base", "manifest", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_with_the_field_and_nothing_stored(federation_server, base, manifest, field):
    with federation_server.client() as http:
        answer = http.post(base, json=manifest)
        assert answer.status_code == 422, answer.text
        status = answer.json()
        assert (status["kind"], status["reason"], status["code"]) == ("Status", "Invalid", 422)
        assert field in [cause["field"] for cause in status["details"]["causes"]], status
        assert http.get(f"{base}/bad").status_code == 404
        listed = http.get(base)
        assert listed.status_code == 200 and listed.json()["items"] == []


def test_an_update_to_a_bad_value_keeps_the_stored_object(federation_server):
    with federation_server.client() as http:
        created = http.post(DEPLOYMENTS, json=m.DEPLOYMENT)
        assert created.status_code == 201, created.text
        bad = copy.deepcopy(created.json())
        bad["spec"]["replicas"] = -1
        answer = http.put(f"{DEPLOYMENTS}/nginx", json=bad)
        assert answer.status_code == 422, answer.text
        stored = http.get(f"{DEPLOYMENTS}/nginx").json()
        assert stored["spec"]["replicas"] == m.DEPLOYMENT["spec"]["replicas"]
        assert stored["metadata"]["resourceVersion"] == created.json()["metadata"]["resourceVersion"]


def test_null_replicas_is_unset_as_kube_apiserver_reads_it(federation_server):
    with federation_server.client() as http:
        answer = http.post(DEPLOYMENTS, json=deployment(replicas=None))
        assert answer.status_code == 201, answer.text


def test_rbac_names_follow_kube_apiserver(federation_server):
    role = copy.deepcopy(m.CLUSTER_ROLE)
    role["metadata"]["name"] = "system:aggregate-to-view"
    with federation_server.client() as http:
        created = http.post(CLUSTER_ROLES, json=role)
        assert created.status_code == 201, created.text
        assert http.get(f"{CLUSTER_ROLES}/system:aggregate-to-view").status_code == 200
