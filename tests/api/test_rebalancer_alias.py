"""The alias form of a WorkloadRebalancer over real HTTP: ``policy.karmada.io/v1alpha1`` with ``spec.workload``
or ``spec.workloadList`` is stored in Karmada's form and answered with ``Warning: 299`` headers."""

from __future__ import annotations

import time
from typing import Any

ALIAS_PATH = "/apis/policy.karmada.io/v1alpha1/workloadrebalancers"
PATH = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default"}
REF_API = {**REF, "name": "api"}


def alias(
    name: str = "fail-back", api_version: str = "policy.karmada.io/v1alpha1", **spec: Any
) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "WorkloadRebalancer", "metadata": {"name": name}, "spec": spec}


def warnings(answer: Any) -> list[str]:
    return answer.headers.get_list("warning")


def finished_status(http: Any, name: str) -> dict[str, Any]:
    """The status once the running controller finished the rebalancer (it writes nothing more after)."""
    deadline = time.monotonic() + 20
    status: dict[str, Any] = {}
    while time.monotonic() < deadline and "finishTime" not in status:
        status = http.get(f"{PATH}/{name}").json().get("status") or {}
        time.sleep(0.05)
    return status


def test_alias_create_is_stored_in_karmadas_form_with_a_warning(federation_server) -> None:
    with federation_server.client() as http:
        created = http.post(ALIAS_PATH, json=alias(workload=REF, ttlSecondsAfterFinished=300))
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["apiVersion"] == "apps.karmada.io/v1alpha1"
        assert body["spec"] == {"workloads": [REF], "ttlSecondsAfterFinished": 300}
        said = warnings(created)
        assert len(said) == 2 and all(w.startswith('299 - "') and w.endswith('"') for w in said)
        assert "policy.karmada.io/v1alpha1 WorkloadRebalancer is an alias" in said[0]
        assert "spec.workload (one workload) is an alias: stored as spec.workloads" in said[1]
        stored = http.get(f"{PATH}/fail-back").json()
        assert stored["apiVersion"] == "apps.karmada.io/v1alpha1" and stored["spec"] == body["spec"]
        assert http.get(f"{ALIAS_PATH}/fail-back").json()["metadata"]["uid"] == stored["metadata"]["uid"]


def test_alias_replace_with_a_workload_list(federation_server) -> None:
    with federation_server.client() as http:
        created = http.put(f"{ALIAS_PATH}/wr", json=alias("wr", workloadList=[REF]))
        assert created.status_code == 201, created.text
        finished_status(http, "wr")  # so the controller's status write cannot race the replace
        replaced = http.put(f"{ALIAS_PATH}/wr", json=alias("wr", workloadList=[REF, REF_API]))
        assert replaced.status_code == 200, replaced.text
        assert replaced.json()["spec"] == {"workloads": [REF, REF_API]}
        assert replaced.json()["metadata"]["generation"] == 2
        assert len(warnings(replaced)) == 2


def test_karmadas_form_gets_no_warning_and_an_alias_field_alone_gets_one(federation_server) -> None:
    with federation_server.client() as http:
        plain = http.post(PATH, json=alias("plain", "apps.karmada.io/v1alpha1", workloads=[REF]))
        assert plain.status_code == 201 and warnings(plain) == []
        field = http.post(PATH, json=alias("field", "apps.karmada.io/v1alpha1", workloadList=[REF]))
        assert field.status_code == 201, field.text
        assert len(warnings(field)) == 1 and field.json()["spec"] == {"workloads": [REF]}


def test_two_spellings_of_the_list_are_refused(federation_server) -> None:
    with federation_server.client() as http:
        answer = http.post(ALIAS_PATH, json=alias(workloads=[REF], workload=REF_API))
        assert answer.status_code == 422, answer.text
        assert [c["field"] for c in answer.json()["details"]["causes"]] == ["spec.workload"]
        assert http.get(f"{PATH}/fail-back").status_code == 404


def test_discovery_lists_the_alias_path(federation_server) -> None:
    with federation_server.client() as http:
        resources = http.get("/apis/policy.karmada.io/v1alpha1").json()["resources"]
        entry = next(r for r in resources if r["name"] == "workloadrebalancers")
        assert (entry["kind"], entry["namespaced"]) == ("WorkloadRebalancer", False)


def test_the_running_server_acts_on_a_rebalancer(federation_server) -> None:
    """The controller is wired: a rebalancer naming a workload without a binding gets its result."""
    with federation_server.client() as http:
        assert http.post(ALIAS_PATH, json=alias(workload=REF)).status_code == 201
        status = finished_status(http, "fail-back")
    [entry] = status["observedWorkloads"]
    assert (entry["result"], entry["reason"]) == ("Failed", "ReferencedBindingNotFound")
