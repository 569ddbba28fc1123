"""KubernetesMemberClient against a running simulator: probe, version, discovery, summary, apply, delete."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes.client.configuration
import pytest

from federation.members.client import KubernetesMemberClient
from federation.members.errors import KubeconfigError, MemberError
from federation.sim import RunningSimulator
from tests.members.helpers import deployment, wait_for


@pytest.fixture
def client(sim: RunningSimulator) -> KubernetesMemberClient:
    return KubernetesMemberClient("member1", sim.kubeconfig)


def test_probe_and_version(client: KubernetesMemberClient) -> None:
    result = client.probe()
    assert result.ok and result.status_code == 200 and result.endpoint == "/readyz"
    assert result.latency_s >= 0
    assert client.version() == "v1.32.0"


def test_api_enablements_have_karmadas_shape(client: KubernetesMemberClient) -> None:
    enablements = client.api_enablements()
    group_versions = [e["groupVersion"] for e in enablements]
    assert group_versions == sorted(group_versions)
    by_gv = {e["groupVersion"]: e["resources"] for e in enablements}
    assert {"name": "deployments", "kind": "Deployment"} in by_gv["apps/v1"]
    assert {"name": "pods", "kind": "Pod"} in by_gv["v1"]
    assert "batch/v1" in by_gv
    assert all("/" not in r["name"] for resources in by_gv.values() for r in resources)
    names = [r["name"] for r in by_gv["apps/v1"]]
    assert names == sorted(names)


def test_resource_summary_numbers_are_exact(start_sim: Any) -> None:
    sim = start_sim(nodes=2, node_cpu="4", node_memory="8Gi", node_storage="100Gi")
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    # 1500m pods: two fit on node 0 (4 cores), the third goes to node 1.
    client.apply(deployment("small", 3, cpu="1500m", memory="1Gi"))
    # 3-core pods fit nowhere any more (1 and 2.5 cores free): both stay pending.
    client.apply(deployment("large", 2, cpu="3", memory="2Gi"))
    summary = client.resource_summary()
    assert summary.node_summary == {"totalNum": 2, "readyNum": 2}
    assert summary.resource_summary == {
        "allocatable": {"cpu": "8", "ephemeral-storage": "200Gi", "memory": "16Gi", "pods": "220"},
        "allocated": {"cpu": "4500m", "memory": "3Gi", "pods": "3"},
        "allocating": {"cpu": "6", "memory": "4Gi", "pods": "2"},
    }


def test_apply_twice_is_a_no_op_and_creates_the_namespace(client: KubernetesMemberClient) -> None:
    manifest = deployment("web", 2, namespace="team-a")
    manifest["status"] = {"replicas": 99}  # server-owned: stripped before applying
    first = client.apply(manifest)
    second = client.apply(manifest)
    assert first["metadata"]["generation"] == second["metadata"]["generation"] == 1
    assert first["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]
    assert second["metadata"]["managedFields"][0]["manager"] == "federation"
    changed = client.apply(deployment("web", 3, namespace="team-a"))
    assert changed["metadata"]["generation"] == 2
    status = wait_for(
        lambda: (
            (s := client.get("apps/v1", "Deployment", "team-a", "web")["status"])  # type: ignore[index]
            .get("readyReplicas")
            == 3
            and s
        )
    )
    assert status["observedGeneration"] == 2


def test_apply_leaves_the_callers_manifest_as_it_was(client: KubernetesMemberClient) -> None:
    """The client strips server-owned fields and defaults the namespace in its own copy: the caller's
    manifest (a Work's, shared with other readers) is never changed."""
    manifest = deployment("keep", 1)
    del manifest["metadata"]["namespace"]
    manifest["metadata"].update(resourceVersion="7", uid="u-1", managedFields=[{"manager": "x"}])
    manifest["status"] = {"replicas": 99}
    before = copy.deepcopy(manifest)
    applied = client.apply(manifest)
    assert manifest == before
    assert applied["metadata"]["namespace"] == "default" and applied["metadata"]["uid"] != "u-1"


def _counting(client: KubernetesMemberClient, forbid_namespaces: bool = False) -> list[str]:
    """The writes ``client`` makes from now on, as ``METHOD path`` (its discovery GETs left out); with
    ``forbid_namespaces`` its identity may not create namespaces (a 403, as a member's RBAC would answer)."""
    calls: list[str] = []
    real = client.request

    def request(method: str, path: str, **kwargs: Any) -> Any:
        if method != "GET":
            calls.append(f"{method} {path}")
        if forbid_namespaces and (method, path) == ("POST", "/api/v1/namespaces"):
            raise MemberError(client.name, "POST /api/v1/namespaces: 403 forbidden", kind="forbidden")
        return real(method, path, **kwargs)

    client.request = request  # type: ignore[method-assign]
    return calls


CREATE_NAMESPACE = "POST /api/v1/namespaces"


def _apply_of(namespace: str, name: str) -> str:
    return f"PATCH /apis/apps/v1/namespaces/{namespace}/deployments/{name}"


def test_a_namespace_is_created_before_the_first_apply_into_it_and_then_never_again(
    sim: RunningSimulator,
) -> None:
    """Two calls where the namespace is missing (create, apply), not three (an apply answered 404, the
    create, the apply again); none more for the next objects, nor for the namespaces every cluster has."""
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    calls = _counting(client)
    client.apply(deployment("a", 1, namespace="team-b"))
    client.apply(deployment("b", 1, namespace="team-b"))
    client.apply(deployment("c", 1, namespace="default"))
    assert calls == [
        CREATE_NAMESPACE,
        _apply_of("team-b", "a"),
        _apply_of("team-b", "b"),
        _apply_of("default", "c"),
    ]
    # A client that has not seen the namespace yet (a restart): one create answered 409, once.
    other = KubernetesMemberClient("member1", sim.kubeconfig)
    other_calls = _counting(other)
    other.apply(deployment("a", 2, namespace="team-b"))
    other.apply(deployment("b", 2, namespace="team-b"))
    assert other_calls == [CREATE_NAMESPACE, _apply_of("team-b", "a"), _apply_of("team-b", "b")]
    assert client.get("apps/v1", "Deployment", "team-b", "b")["spec"]["replicas"] == 2  # type: ignore[index]


def test_a_namespace_deleted_after_the_client_saw_it_is_created_again(sim: RunningSimulator) -> None:
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    client.apply(deployment("a", 1, namespace="team-c"))
    assert client.delete("v1", "Namespace", None, "team-c") is True
    wait_for(lambda: client.get("v1", "Namespace", None, "team-c") is None)
    calls = _counting(client)
    applied = client.apply(deployment("a", 1, namespace="team-c"))
    assert applied["metadata"]["namespace"] == "team-c"
    assert calls == [_apply_of("team-c", "a"), CREATE_NAMESPACE, _apply_of("team-c", "a")]


def test_an_identity_that_may_not_create_namespaces_applies_into_existing_ones(sim: RunningSimulator) -> None:
    KubernetesMemberClient("member1", sim.kubeconfig).apply(deployment("a", 1, namespace="team-d"))
    restricted = KubernetesMemberClient("member1", sim.kubeconfig)
    calls = _counting(restricted, forbid_namespaces=True)
    restricted.apply(deployment("b", 1, namespace="team-d"))
    assert calls == [CREATE_NAMESPACE, _apply_of("team-d", "b")]
    # Where the namespace is missing, the apply fails as before: with the member's answer to the create.
    with pytest.raises(MemberError) as failed:
        restricted.apply(deployment("c", 1, namespace="team-e"))
    assert failed.value.kind == "forbidden"


def test_a_static_token_is_not_reapplied_before_every_request(
    client: KubernetesMemberClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kubernetes loader's refresh hook re-applies the kubeconfig before each call (for tokens that
    expire), reading the environment's proxies each time; a static token needs none of it."""
    calls: list[int] = []
    real = kubernetes.client.configuration.getproxies
    monkeypatch.setattr(kubernetes.client.configuration, "getproxies", lambda: calls.append(1) or real())
    for _ in range(3):
        assert client.version() == "v1.32.0"  # the token still goes with every request
    assert calls == []


@pytest.mark.parametrize(
    ("path", "query", "content_type"),
    [
        ("/version", None, "application/json"),
        ("/api/v1/namespaces", [], "application/json"),
        (
            "/apis/apps/v1/deployments",
            [
                ("labelSelector", "karmada.io/managed=true,app in (a b)"),
                ("limit", "500"),
                ("continue", "eyJ+/="),
            ],
            "application/json",
        ),
        (
            "/apis/apps/v1/namespaces/ns/deployments/web",
            [("fieldManager", "federation"), ("force", "true")],
            "application/apply-patch+yaml",
        ),
    ],
)
def test_requests_carry_what_the_clients_own_serialisation_gives(
    client: KubernetesMemberClient, path: str, query: list[tuple[str, str]] | None, content_type: str
) -> None:
    """The URL and headers are built once per content type instead of by ``param_serialize`` per call: they
    must be what it gives (the token, the user agent, the quoting of every query value)."""
    header_params = {"Accept": "application/json", "Content-Type": content_type}
    _, url, headers, _, _ = client._api.param_serialize(
        "GET", path, query_params=query or [], header_params=header_params, auth_settings=["BearerToken"]
    )
    for _ in range(2):  # the second time from the kept headers, which the first call's caller may change
        mine = client._headers_for(content_type)
        assert (client._url(path, query), mine) == (url, headers)
        assert mine["authorization"].startswith("Bearer ")
        mine["Content-Type"] = "changed"


def test_get_and_delete(client: KubernetesMemberClient) -> None:
    client.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default"},
            "data": {"a": "b"},
        }
    )
    assert client.get("v1", "ConfigMap", "default", "cm")["data"] == {"a": "b"}  # type: ignore[index]
    assert client.delete("v1", "ConfigMap", "default", "cm") is True
    assert client.delete("v1", "ConfigMap", "default", "cm") is False
    assert client.get("v1", "ConfigMap", "default", "cm") is None


def test_unlisted_kinds_round_trip(client: KubernetesMemberClient) -> None:
    gadget = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"size": 1},
    }
    client.apply(gadget)
    assert client.get("example.com/v1", "Gadget", "default", "g")["spec"] == {"size": 1}  # type: ignore[index]
    assert client.delete("example.com/v1", "Gadget", "default", "g") is True


def test_wrong_token_is_an_unauthorized_member_error(sim: RunningSimulator) -> None:
    kubeconfig = sim.kubeconfig
    kubeconfig["users"][0]["user"]["token"] = "wrong"
    client = KubernetesMemberClient("member1", kubeconfig)
    with pytest.raises(MemberError) as exc:
        client.version()
    assert exc.value.kind == "unauthorized" and exc.value.status == 401
    assert exc.value.cluster == "member1" and "\n" not in str(exc.value)
    probe = client.probe()
    assert probe.online and not probe.healthy and probe.status_code == 401


def test_unreachable_member(sim: RunningSimulator) -> None:
    client = KubernetesMemberClient("member1", sim.kubeconfig)
    sim.stop()
    with pytest.raises(MemberError) as exc:
        client.version()
    assert exc.value.kind == "unreachable"
    assert not client.probe().online


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_is_verified_against_the_kubeconfig_ca(start_sim: Any) -> None:
    sim, other = start_sim(), start_sim(name="member2")
    kubeconfig = sim.kubeconfig
    kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"] = other.kubeconfig["clusters"][0][
        "cluster"
    ]["certificate-authority-data"]
    client = KubernetesMemberClient("member1", kubeconfig)
    with pytest.raises(MemberError) as exc:
        client.version()
    assert exc.value.kind == "unreachable"
    assert not client.probe().online
    del kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]
    kubeconfig["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    insecure = KubernetesMemberClient("member1", kubeconfig)
    assert insecure.version() == "v1.32.0" and insecure.probe().ok


def test_bad_kubeconfig_is_a_kubeconfig_error() -> None:
    with pytest.raises(KubeconfigError) as exc:
        KubernetesMemberClient("m", {"clusters": [], "contexts": [], "users": []})
    assert exc.value.cluster == "m" and isinstance(exc.value, MemberError)


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        ("wrong-ca", "x509: certificate signed by unknown authority"),
        ("stopped", "connection refused"),
        ("slow", "timeout: no answer within the probe deadline"),
    ],
)
def test_ready_condition_says_why_a_probe_failed(start_sim: Any, fault: str, cause: str) -> None:
    """The Ready condition names the cause, not only "cluster is not reachable" (kubectl's wording)."""
    from federation.controllers.cluster_status import observe

    sim = start_sim(latency_ms=3000) if fault == "slow" else start_sim()
    kubeconfig = sim.kubeconfig
    if fault == "wrong-ca":
        other = start_sim(name="member2")
        cluster = kubeconfig["clusters"][0]["cluster"]
        cluster["certificate-authority-data"] = other.kubeconfig["clusters"][0]["cluster"][
            "certificate-authority-data"
        ]
    client = KubernetesMemberClient("member1", kubeconfig, timeout=0.5)
    if fault == "stopped":
        sim.stop()
    condition = observe(client).condition
    assert condition.status == "False" and condition.reason == "ClusterNotReachable"
    assert condition.message.startswith(f"cluster is not reachable: {cause}"), condition.message
