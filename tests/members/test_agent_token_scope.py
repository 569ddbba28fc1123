"""An agent token works for its own cluster only: everything about another cluster is 403, and so is any
write beyond its lease, its Works' status and its Cluster's status. Plus the lease endpoint's own rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from federation.members.agent_api import AgentApi, AgentApiError
from tests.members.test_agent_support import (
    ApiServer,
    deployment_manifest,
    put_work,
    start_api_server,
    tombstone,
    work,
)

OWN, OTHER = "edge1", "edge2"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases"
OTHER_LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def works_path(cluster: str) -> str:
    return f"/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-{cluster}/works"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    running = start_api_server(Path(tmp_path_factory.mktemp("scope")))
    try:
        for name in (OWN, OTHER):
            running.join_pull(name)
            put_work(running, work(name, "web-abc", deployment_manifest("web", 1)))
        yield running
    finally:
        running.process.stop()


@pytest.fixture(scope="module")
def token(api: ApiServer) -> str:
    return api.token("agent", OWN)


def lease(name: str) -> dict[str, object]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 40},
    }


def status_body(kind: str, api_version: str, name: str, namespace: str | None = None) -> dict[str, object]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "status": {}}


ALLOWED = [
    ("GET", f"{CLUSTERS}/{OWN}", None),
    ("PUT", f"{CLUSTERS}/{OWN}/status", status_body("Cluster", "cluster.karmada.io/v1alpha1", OWN)),
    ("GET", works_path(OWN), None),
    ("GET", f"{works_path(OWN)}/web-abc", None),
    (
        "PUT",
        f"{works_path(OWN)}/web-abc/status",
        status_body("Work", "work.karmada.io/v1alpha1", "web-abc", f"karmada-es-{OWN}"),
    ),
    ("PUT", f"{LEASES}/{OWN}", lease(OWN)),
    ("GET", f"{LEASES}/{OWN}", None),
]

FORBIDDEN = [
    ("GET", f"{CLUSTERS}/{OTHER}", None),
    ("GET", CLUSTERS, None),
    ("PUT", f"{CLUSTERS}/{OTHER}/status", status_body("Cluster", "cluster.karmada.io/v1alpha1", OTHER)),
    (
        "PUT",
        f"{CLUSTERS}/{OWN}",
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": OWN},
            "spec": {"syncMode": "Pull"},
        },
    ),
    ("DELETE", f"{CLUSTERS}/{OWN}", None),
    ("GET", works_path(OTHER), None),
    ("GET", f"{works_path(OTHER)}/web-abc", None),
    (
        "PUT",
        f"{works_path(OTHER)}/web-abc/status",
        status_body("Work", "work.karmada.io/v1alpha1", "web-abc", f"karmada-es-{OTHER}"),
    ),
    ("POST", works_path(OWN), work(OWN, "new-abc", deployment_manifest("new", 1))),
    ("PUT", f"{works_path(OWN)}/web-abc", work(OWN, "web-abc", deployment_manifest("web", 5))),
    ("DELETE", f"{works_path(OWN)}/web-abc", None),
    ("PUT", f"{LEASES}/{OTHER}", lease(OTHER)),
    ("GET", f"{LEASES}/{OTHER}", None),
    # Its own lease lives in karmada-cluster only: a Lease named after its cluster elsewhere is not its own.
    ("PUT", f"{OTHER_LEASES.format(namespace='default')}/{OWN}", lease(OWN)),
    ("PUT", f"{OTHER_LEASES.format(namespace='kube-system')}/{OWN}", lease(OWN)),
    ("GET", f"{OTHER_LEASES.format(namespace='default')}/{OWN}", None),
    ("POST", OTHER_LEASES.format(namespace="default"), lease(OWN)),
    ("DELETE", f"{LEASES}/{OWN}", None),
    ("GET", LEASES, None),
    ("GET", "/apis/work.karmada.io/v1alpha2/resourcebindings", None),
    ("GET", "/apis/apps/v1/namespaces/default/deployments", None),
    ("POST", "/federation/v1/clusters/join", {"name": "edge3", "syncMode": "Pull"}),
    ("DELETE", f"/federation/v1/clusters/{OTHER}", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ALLOWED)
def test_what_an_agent_may_do_for_its_own_cluster(
    api: ApiServer, token: str, method: str, path: str, body: object
) -> None:
    with api.client(token) as http:
        answer = http.request(method, path, json=body)
    assert answer.status_code in (200, 201), answer.text


@pytest.mark.parametrize(("method", "path", "body"), FORBIDDEN)
def test_everything_else_is_forbidden(
    api: ApiServer, token: str, method: str, path: str, body: object
) -> None:
    with api.client(token) as http:
        answer = http.request(method, path, json=body)
    assert answer.status_code == 403, answer.text
    assert answer.json()["reason"] == "Forbidden"
    assert f"an agent of cluster '{OWN}'" in answer.json()["message"]


def test_the_agent_client_pointed_at_another_cluster_gets_403(api: ApiServer, token: str) -> None:
    client = AgentApi(api.url, token, OTHER, ca_pem=api.ca_pem)
    try:
        for call in (client.works, client.get_cluster, lambda: client.renew_lease("me", 40)):
            with pytest.raises(AgentApiError) as caught:
                call()
            assert caught.value.code == 403
    finally:
        client.close()


def test_a_lease_needs_a_token_and_a_joined_cluster(api: ApiServer) -> None:
    with api.client("not-a-token") as http:
        assert http.put(f"{LEASES}/{OWN}", json=lease(OWN)).status_code == 401
    with api.client() as http:
        missing = http.put(f"{LEASES}/ghost", json=lease("ghost"))
        assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
        assert http.get(f"{LEASES}/ghost").status_code == 404


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ([], "must be a Lease object"),
        ({"metadata": {"name": "other"}}, "does not match the name on the URL"),
        ({"spec": {"leaseDurationSeconds": 0}}, "leaseDurationSeconds"),
        ({"spec": {"leaseDurationSeconds": "40"}}, "leaseDurationSeconds"),
        ({"spec": {"holderIdentity": 7}}, "holderIdentity"),
    ],
)
def test_a_bad_lease_body_is_a_400_naming_the_problem(api: ApiServer, body: object, fragment: str) -> None:
    with api.client() as http:
        answer = http.put(f"{LEASES}/{OWN}", json=body)
    assert answer.status_code == 400 and fragment in answer.json()["message"]


def test_renewals_keep_the_holder_and_count_transitions(api: ApiServer, token: str) -> None:
    client = AgentApi(api.url, token, OWN, ca_pem=api.ca_pem)
    try:
        first = client.renew_lease("agent-a", 40)["spec"]
        again = client.renew_lease("agent-a", 40)["spec"]
        other = client.renew_lease("agent-b", 40)["spec"]
    finally:
        client.close()
    assert again["acquireTime"] == first["acquireTime"] and again["renewTime"] >= first["renewTime"]
    assert again["leaseTransitions"] == first["leaseTransitions"]
    assert other["holderIdentity"] == "agent-b" and other["leaseTransitions"] == first["leaseTransitions"] + 1


def finalize(api: ApiServer, token: str | None, cluster: str, name: str, rv: object = None) -> httpx.Response:
    with api.client(token) as http:
        return http.post(
            f"/federation/v1/clusters/{cluster}/works/{name}/finalize", json={"resourceVersion": rv}
        )


def test_finalize_removes_only_tombstoned_works_at_the_version_read(api: ApiServer, token: str) -> None:
    put_work(api, work(OWN, "gone-abc", deployment_manifest("gone", 1)))
    live = finalize(api, token, OWN, "gone-abc")
    assert live.status_code == 409 and "not being deleted" in live.json()["message"]
    marked = tombstone(api, OWN, "gone-abc")
    assert finalize(api, token, OTHER, "web-abc").status_code == 403
    assert finalize(api, token, OWN, "gone-abc", rv="1").status_code == 409
    assert finalize(api, token, OWN, "gone-abc", rv=marked["metadata"]["resourceVersion"]).status_code == 200
    assert finalize(api, token, OWN, "gone-abc").status_code == 404
