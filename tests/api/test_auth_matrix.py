"""The auth matrix: every caller by representative requests → the status code, as one table.

Callers: admin, viewer, an agent bound to cluster OWN, and four that are not authenticated at all (no token,
an unknown token, an expired token, a revoked token: 401 for every request, before anything else). A row
names the request and the code for admin / viewer / agent. Requests that create or delete use a name per
caller and prepare their own precondition, so the rows do not depend on each other's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from federation.apiclient import tls_verify
from federation.store.tokens import TokenRepository
from tests.members.test_agent_support import ApiServer, deployment_manifest, put_work, start_api_server, work

OWN, OTHER = "edge1", "edge2"
PP = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
SECRETS = "/api/v1/namespaces/default/secrets"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
PASSES = -1  # authorization lets it through; what follows is another component's answer (not 401/403)
UNAUTHENTICATED = ("no-token", "bad-token", "expired", "revoked")
ROLES = ("admin", "viewer", "agent", *UNAUTHENTICATED)


def works(cluster: str) -> str:
    return f"/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-{cluster}/works"


def lease_path(namespace: str, name: str) -> str:
    return f"{LEASES.format(namespace=namespace)}/{name}"


# -- bodies ------------------------------------------------------------------------------------------------


def policy(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {"clusterAffinity": {"clusterNames": [OWN]}},
        },
    }


def secret(name: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque", "data": {"k": "dg=="}}


def cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Pull"},
    }


def cluster_status(name: str) -> dict[str, Any]:
    return {**cluster(name), "status": {"kubernetesVersion": "v1.30.0"}}


def work_status(cluster_name: str) -> dict[str, Any]:
    body = work(cluster_name, "web-abc", deployment_manifest("web", 1))
    return {**body, "status": {"conditions": []}}


def lease(name: str, namespace: str = "karmada-cluster") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40},
    }


# -- preconditions (run as admin) ------------------------------------------------------------------------


def absent(path: str) -> Callable[[httpx.Client, str], None]:
    def prepare(admin: httpx.Client, role: str) -> None:
        answer = admin.delete(path.format(role=role))
        assert answer.status_code in (200, 404), answer.text

    return prepare


def present(path: str, body: Callable[[str], dict[str, Any]]) -> Callable[[httpx.Client, str], None]:
    def prepare(admin: httpx.Client, role: str) -> None:
        name = f"victim-{role}"
        if admin.get(f"{path}/{name}").status_code == 404:
            answer = admin.post(path, json=body(name))
            assert answer.status_code == 201, answer.text

    return prepare


def present_work(admin: httpx.Client, role: str) -> None:
    body = work(OWN, f"victim-{role}", deployment_manifest("web", 1))
    answer = admin.put(f"{works(OWN)}/victim-{role}", json=body)
    assert answer.status_code in (200, 201), answer.text


# -- the table ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Request:
    name: str
    method: str
    path: str  # `{role}` is replaced by the caller's role: a name of its own
    admin: int
    viewer: int
    agent: int
    body: Callable[[str], Any] | None = None  # called with the object name
    prepare: Callable[[httpx.Client, str], None] | None = None

    def expected(self, role: str) -> int:
        if role in UNAUTHENTICATED:
            return 401
        return int(getattr(self, role))


TABLE = [
    #        request                      method    path                                  admin viewer agent
    Request("get policy", "GET", f"{PP}/pp", 200, 200, 403),
    Request("list policies", "GET", PP, 200, 200, 403),
    Request(
        "create policy", "POST", PP, 201, 403, 403,
        body=lambda role: policy(f"new-{role}"), prepare=absent(f"{PP}/new-{{role}}"),
    ),
    Request("delete policy", "DELETE", f"{PP}/victim-{{role}}", 200, 403, 403, prepare=present(PP, policy)),
    Request("get secret", "GET", f"{SECRETS}/s", 200, 403, 403),
    Request("list secrets", "GET", SECRETS, 200, 403, 403),
    Request("list secrets everywhere", "GET", "/api/v1/secrets", 200, 403, 403),
    Request(
        "create secret", "POST", SECRETS, 201, 403, 403,
        body=lambda role: secret(f"new-{role}"), prepare=absent(f"{SECRETS}/new-{{role}}"),
    ),
    Request(
        "delete secret", "DELETE", f"{SECRETS}/victim-{{role}}", 200, 403, 403, prepare=present(SECRETS, secret)
    ),
    Request("get own cluster", "GET", f"{CLUSTERS}/{OWN}", 200, 200, 200),
    Request("get other cluster", "GET", f"{CLUSTERS}/{OTHER}", 200, 200, 403),
    Request("list clusters", "GET", CLUSTERS, 200, 200, 403),
    Request(
        "create cluster", "POST", CLUSTERS, 201, 403, 403,
        body=lambda role: cluster(f"new-{role}"), prepare=absent(f"{CLUSTERS}/new-{{role}}"),
    ),
    Request(
        "delete cluster", "DELETE", f"{CLUSTERS}/victim-{{role}}", 200, 403, 403,
        prepare=present(CLUSTERS, cluster),
    ),
    Request(
        "own cluster status", "PUT", f"{CLUSTERS}/{OWN}/status", 200, 403, 200,
        body=lambda _: cluster_status(OWN),
    ),
    Request(
        "other cluster status", "PUT", f"{CLUSTERS}/{OTHER}/status", 200, 403, 403,
        body=lambda _: cluster_status(OTHER),
    ),
    Request("get own work", "GET", f"{works(OWN)}/web-abc", 200, 200, 200),
    Request("get other work", "GET", f"{works(OTHER)}/web-abc", 200, 200, 403),
    Request("list own works", "GET", works(OWN), 200, 200, 200),
    Request("list other works", "GET", works(OTHER), 200, 200, 403),
    Request(
        "own work status", "PUT", f"{works(OWN)}/web-abc/status", 200, 403, 200,
        body=lambda _: work_status(OWN),
    ),
    Request(
        "other work status", "PUT", f"{works(OTHER)}/web-abc/status", 200, 403, 403,
        body=lambda _: work_status(OTHER),
    ),
    Request(
        "create own work", "POST", works(OWN), 201, 403, 403,
        body=lambda role: work(OWN, f"new-{role}", deployment_manifest("web", 1)),
        prepare=absent(f"{works(OWN)}/new-{{role}}"),
    ),
    Request("delete own work", "DELETE", f"{works(OWN)}/victim-{{role}}", 200, 403, 403, prepare=present_work),
    Request("get own lease", "GET", lease_path("karmada-cluster", OWN), 200, 200, 200),
    Request(
        "renew own lease", "PUT", lease_path("karmada-cluster", OWN), 200, 403, 200,
        body=lambda _: lease(OWN),
    ),
    Request(
        "renew other lease", "PUT", lease_path("karmada-cluster", OTHER), 200, 403, 403,
        body=lambda _: lease(OTHER),
    ),
    Request(
        "own-named lease in default", "PUT", lease_path("default", OWN), PASSES, 403, 403,
        body=lambda _: lease(OWN, "default"),
    ),
    Request(
        "own-named lease in kube-system", "PUT", lease_path("kube-system", OWN), PASSES, 403, 403,
        body=lambda _: lease(OWN, "kube-system"),
    ),
    Request(
        "create lease in default", "POST", LEASES.format(namespace="default"), PASSES, 403, 403,
        body=lambda _: lease(OWN, "default"),
    ),
    Request("discovery", "GET", "/apis", 200, 200, 200),
]  # fmt: skip


# -- the server and its callers ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    running = start_api_server(Path(tmp_path_factory.mktemp("matrix")))
    try:
        for name in (OWN, OTHER):
            running.join_pull(name)
            put_work(running, work(name, "web-abc", deployment_manifest("web", 1)))
        with running.client() as admin:
            for path, body in ((PP, policy("pp")), (SECRETS, secret("s"))):
                assert admin.post(path, json=body).status_code == 201
            for name in (OWN, OTHER):
                assert admin.put(lease_path("karmada-cluster", name), json=lease(name)).status_code == 200
        yield running
    finally:
        running.process.stop()


@pytest.fixture(scope="module")
def tokens(api: ApiServer) -> dict[str, str | None]:
    assert api.process.api_context is not None
    uow = api.process.api_context.uow
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    with uow() as session:
        _, viewer = TokenRepository(session).create("viewer", "viewer")
        _, agent = TokenRepository(session).create("agent", "agent", OWN)
        _, expired = TokenRepository(session, clock=lambda: an_hour_ago).create(
            "expired", "admin", ttl=timedelta(minutes=59)
        )
        _, revoked = TokenRepository(session).create("revoked", "admin")
    with uow() as session:
        TokenRepository(session).delete("revoked")
    return {
        "admin": api.process.admin_token,
        "viewer": viewer,
        "agent": agent,
        "no-token": None,
        "bad-token": "fed_not-a-token-anyone-was-given",
        "expired": expired,
        "revoked": revoked,
    }


def call(api: ApiServer, token: str | None, request: Request, role: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = request.body(role) if request.body else None
    with httpx.Client(base_url=api.url, headers=headers, timeout=30, verify=tls_verify(api.ca_pem)) as http:
        return http.request(request.method, request.path.format(role=role), json=body)


CASES = [(role, request) for request in TABLE for role in ROLES]


@pytest.mark.parametrize(("role", "request_"), CASES, ids=[f"{role}:{r.name}" for role, r in CASES])
def test_auth_matrix(api: ApiServer, tokens: dict[str, str | None], role: str, request_: Request) -> None:
    if request_.prepare is not None:
        with api.client() as admin:
            request_.prepare(admin, role)
    answer = call(api, tokens[role], request_, role)
    expected = request_.expected(role)
    if expected == PASSES:
        assert answer.status_code not in (401, 403), answer.text
        return
    assert answer.status_code == expected, answer.text
    if expected in (401, 403):
        status = answer.json()
        assert status["kind"] == "Status" and status["code"] == expected
        assert status["reason"] == {401: "Unauthorized", 403: "Forbidden"}[expected]
