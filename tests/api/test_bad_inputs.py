"""The bad-input table (issue 7): every request kube-apiserver refuses is refused here too, on both backends.

Each case checks the status code, that the answer is a Kubernetes Status with the expected reason (and, for
Invalid, the field in details.causes), that nothing was stored, and that a list of that kind still answers
200 afterwards. One server per backend runs the whole table; a failure lists every case that went wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from federation.api.bodies import MAX_DEPTH
from federation.cli import server
from federation.settings import Settings, load_settings
from federation.store.repository import ObjectRepository
from tests.api import manifests as m
from tests.conftest import RunningServer

LIMIT = Settings().api.max_request_body_bytes
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
WIDGETS = "/apis/example.io/v1/namespaces/default/widgets"
JOIN = "/federation/v1/clusters/join"
PLAN = "/federation/v1/plan"


@pytest.fixture
def api_server(tmp_path: Path, database_url: str) -> Iterator[RunningServer]:
    """The API alone (no controllers): what is stored stays exactly what the requests stored."""
    settings = load_settings(data_dir=str(tmp_path / "data"), database_url=database_url, api={"port": 0})
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    try:
        yield RunningServer(process)
    finally:
        process.stop()


# -- bodies ---------------------------------------------------------------------------------------------


def configmap_text(value: str, key: str = '"k"') -> bytes:
    """A ConfigMap named "bad" whose data entry is written verbatim (raw JSON text, to carry any value)."""
    text = (
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad", "namespace": "default"}, '
        f'"data": {{{key}: {value}}}}}'
    )
    return text.encode()


def nested_text(depth: int) -> str:
    """JSON text nesting ``depth`` levels, objects and arrays by turns (built without recursion)."""
    opening = ['{"n": ' if level % 2 == 0 else "[" for level in range(depth)]
    closing = ["}" if level % 2 == 0 else "]" for level in reversed(range(depth))]
    return "".join(opening) + '"leaf"' + "".join(closing)


def widget(name: str, spec: Any, version: str = "v1") -> dict[str, Any]:
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": f"example.io/{version}", "kind": "Widget", "metadata": meta, "spec": spec}


def crd(**changes: Any) -> dict[str, Any]:
    """WIDGET_CRD with top-level spec fields replaced (``metadata`` replaces the metadata)."""
    body = json.loads(json.dumps(m.WIDGET_CRD))
    body["metadata"] = changes.pop("metadata", body["metadata"])
    body["spec"].update(changes)
    return body


def chunks(size: int) -> Iterator[bytes]:
    """A body of ``size`` bytes sent without Content-Length (httpx streams an iterator chunked)."""
    yield b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": {"k": "'
    sent = 0
    while sent < size:
        yield b"x" * 65536
        sent += 65536
    yield b'"}}'


def oversized_configmap() -> bytes:
    return json.dumps({**m.CONFIGMAP, "metadata": {"name": "bad"}, "data": {"k": "x" * LIMIT}}).encode()


# -- the table ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    method: str
    path: str
    body: bytes | dict[str, Any] | Callable[[], Any] | None
    code: int
    reason: str
    cause: str | None = None  # a details.causes[].field the answer must name
    absent: str = f"{CONFIGMAPS}/bad"  # must answer 404 afterwards: nothing was stored
    listing: str = CONFIGMAPS  # must answer 200 afterwards
    token: str = "admin"
    params: tuple[tuple[str, str], ...] = ()


def bad_json(id: str, value: str, key: str = '"k"') -> Case:
    return Case(id, "POST", CONFIGMAPS, configmap_text(value, key), 400, "BadRequest")


TABLE: list[Case] = [
    # strict JSON
    bad_json("nan", "NaN"),
    bad_json("infinity", "Infinity"),
    bad_json("minus-infinity", "-Infinity"),
    bad_json("number-out-of-range", "1e400"),
    bad_json("lone-high-surrogate", '"\\ud800"'),
    bad_json("lone-low-surrogate-in-key", "1", key='"\\udc00"'),
    bad_json("nul-in-value", '"a\\u0000b"'),
    bad_json("nul-in-key", '"v"', key='"k\\u0000"'),
    Case(
        "invalid-utf8",
        "POST",
        CONFIGMAPS,
        configmap_text('"x"').replace(b'"x"', b'"\xff"'),
        400,
        "BadRequest",
    ),
    Case(
        "utf16-body",
        "POST",
        CONFIGMAPS,
        json.dumps(m.CONFIGMAP).encode("utf-16"),
        400,
        "BadRequest",
        absent=f"{CONFIGMAPS}/{m.CONFIGMAP['metadata']['name']}",
    ),
    Case("not-json", "POST", CONFIGMAPS, b"{apiVersion: v1", 400, "BadRequest"),
    Case("empty-body", "POST", CONFIGMAPS, b"", 400, "BadRequest"),
    Case("array-body", "POST", CONFIGMAPS, b"[]", 400, "BadRequest"),
    # nesting
    bad_json("nested-5000-deep", nested_text(5000)),
    Case("100000-brackets", "POST", CONFIGMAPS, b"[" * 100_000, 400, "BadRequest"),
    bad_json("nested-one-past-the-limit", nested_text(MAX_DEPTH - 1)),  # under the object and data
    # size
    Case("too-large-content-length", "POST", CONFIGMAPS, oversized_configmap, 413, "RequestEntityTooLarge"),
    Case("too-large-chunked", "POST", CONFIGMAPS, lambda: chunks(LIMIT), 413, "RequestEntityTooLarge"),
    Case("too-large-put", "PUT", f"{CONFIGMAPS}/bad", oversized_configmap, 413, "RequestEntityTooLarge"),
    Case(
        "too-large-plan-by-viewer",
        "POST",
        PLAN,
        lambda: chunks(LIMIT),
        413,
        "RequestEntityTooLarge",
        token="viewer",
    ),
    Case(
        "too-large-join",
        "POST",
        JOIN,
        oversized_configmap,
        413,
        "RequestEntityTooLarge",
        absent=f"{CLUSTERS}/bad",
        listing=CLUSTERS,
    ),
    # kinds
    Case(
        "misspelt-kind",
        "POST",
        "/apis/apps/v1/namespaces/default/deploymnets",
        {**m.DEPLOYMENT, "kind": "Deploymnet"},
        404,
        "NotFound",
        absent="/apis/apps/v1/namespaces/default/deploymnets/nginx",
        listing=DEPLOYMENTS,
    ),
    Case(
        "misspelt-kind-at-the-real-plural",
        "POST",
        DEPLOYMENTS,
        {**m.DEPLOYMENT, "kind": "Deploymnet"},
        400,
        "BadRequest",
        absent=f"{DEPLOYMENTS}/nginx",
        listing=DEPLOYMENTS,
    ),
    Case(
        "unknown-version-of-policy-group",
        "POST",
        "/apis/policy.karmada.io/v1beta1/namespaces/default/propagationpolicies",
        {**m.PROPAGATION_POLICY, "apiVersion": "policy.karmada.io/v1beta1"},
        404,
        "NotFound",
        absent=f"{POLICIES}/nginx-propagation",
        listing=POLICIES,
    ),
    Case(
        "unknown-version-of-work-group",
        "POST",
        "/apis/work.karmada.io/v9/namespaces/default/works",
        {"apiVersion": "work.karmada.io/v9", "kind": "Work", "metadata": {"name": "w"}},
        404,
        "NotFound",
        absent="/apis/work.karmada.io/v1alpha1/namespaces/default/works/w",
        listing="/apis/work.karmada.io/v1alpha1/works",
    ),
    Case(
        "unknown-version-of-apps",
        "POST",
        "/apis/apps/v1beta1/namespaces/default/deployments",
        {**m.DEPLOYMENT, "apiVersion": "apps/v1beta1"},
        404,
        "NotFound",
        absent=f"{DEPLOYMENTS}/nginx",
        listing=DEPLOYMENTS,
    ),
    Case(
        "kind-without-crd",
        "POST",
        WIDGETS,
        m.CUSTOM_RESOURCE,
        404,
        "NotFound",
        absent=f"{WIDGETS}/w1",
        listing=CONFIGMAPS,
    ),
    Case(
        "crd-name-not-plural-dot-group",
        "POST",
        m.CRDS_PATH,
        crd(metadata={"name": "widgets"}),
        422,
        "Invalid",
        cause="metadata.name",
        absent=f"{m.CRDS_PATH}/widgets",
        listing=m.CRDS_PATH,
    ),
    Case(
        "crd-versions-not-a-list",
        "POST",
        m.CRDS_PATH,
        crd(versions=5),
        422,
        "Invalid",
        cause="spec.versions",
        absent=f"{m.CRDS_PATH}/widgets.example.io",
        listing=m.CRDS_PATH,
    ),
    Case(
        "crd-bad-scope",
        "POST",
        m.CRDS_PATH,
        crd(scope="Global"),
        422,
        "Invalid",
        cause="spec.scope",
        absent=f"{m.CRDS_PATH}/widgets.example.io",
        listing=m.CRDS_PATH,
    ),
    Case(
        "crd-group-without-dot",
        "POST",
        m.CRDS_PATH,
        crd(group="example", metadata={"name": "widgets.example"}),
        422,
        "Invalid",
        cause="spec.group",
        absent=f"{m.CRDS_PATH}/widgets.example",
        listing=m.CRDS_PATH,
    ),
    # resourceVersion
    Case(
        "resource-version-not-a-number",
        "PUT",
        f"{CONFIGMAPS}/bad",
        {**m.CONFIGMAP, "metadata": {"name": "bad", "resourceVersion": "abc"}},
        400,
        "BadRequest",
    ),
    Case(
        "resource-version-a-json-number",
        "POST",
        CONFIGMAPS,
        {**m.CONFIGMAP, "metadata": {"name": "bad", "resourceVersion": 7}},
        400,
        "BadRequest",
    ),
    Case(
        "resource-version-query",
        "GET",
        CONFIGMAPS,
        None,
        400,
        "BadRequest",
        params=(("resourceVersion", "abc"),),
    ),
    # routes and methods
    # application/json is no patch type (kube-apiserver: 415)
    Case("patch-json", "PATCH", f"{CONFIGMAPS}/bad", {"data": {"k": "v"}}, 415, "UnsupportedMediaType"),
    Case("unknown-route", "POST", "/nope", m.CONFIGMAP, 404, "NotFound"),
    Case("unknown-subresource", "PUT", f"{CONFIGMAPS}/bad/scale", m.CONFIGMAP, 404, "NotFound"),
    Case(
        "bad-query-parameter",
        "DELETE",
        "/federation/v1/clusters/bad",
        None,
        400,
        "BadRequest",
        cause="force",
        params=(("force", "maybe"),),
        absent=f"{CLUSTERS}/bad",
        listing=CLUSTERS,
    ),
    # join
    Case(
        "join-kubeconfig-clusters-not-a-list",
        "POST",
        JOIN,
        {"name": "bad", "kubeconfig": {"clusters": 5}},
        422,
        "Invalid",
        cause="kubeconfig.clusters",
        absent=f"{CLUSTERS}/bad",
        listing=CLUSTERS,
    ),
    Case(
        "join-kubeconfig-token-not-a-string",
        "POST",
        JOIN,
        {"name": "bad", "kubeconfig": {"users": [{"name": "u", "user": {"token": 5}}]}},
        422,
        "Invalid",
        cause="kubeconfig.users[0].user.token",
        absent=f"{CLUSTERS}/bad",
        listing=CLUSTERS,
    ),
]


def send(http: httpx.Client, case: Case) -> httpx.Response:
    body = case.body() if callable(case.body) else case.body
    if isinstance(body, dict):
        return http.request(case.method, case.path, json=body, params=case.params)
    return http.request(case.method, case.path, content=body, params=case.params)


def problems(http: httpx.Client, answer: httpx.Response, case: Case) -> list[str]:
    found: list[str] = []
    if answer.status_code != case.code:
        found.append(f"status {answer.status_code}, expected {case.code}: {answer.text[:300]}")
    try:
        status = answer.json()
    except ValueError:
        return [*found, f"the answer is not JSON: {answer.text[:300]!r}"]
    if (
        status.get("kind") != "Status"
        or status.get("reason") != case.reason
        or status.get("code") != case.code
    ):
        found.append(f"not a {case.reason} Status: {status}")
    if case.cause is not None:
        fields = [c.get("field") for c in (status.get("details") or {}).get("causes") or []]
        if case.cause not in fields:
            found.append(f"causes name {fields}, not {case.cause}")
    if (after := http.get(case.absent)).status_code != 404:
        found.append(f"{case.absent} answers {after.status_code} afterwards: something was stored")
    if (listed := http.get(case.listing)).status_code != 200:
        found.append(f"listing {case.listing} answers {listed.status_code} afterwards: {listed.text[:200]}")
    return found


def test_every_bad_input_is_refused_with_a_status_and_stores_nothing(api_server: RunningServer) -> None:
    tokens = {"admin": api_server.admin_token, "viewer": api_server.create_token("viewer")}
    failures: list[str] = []
    for case in TABLE:
        with api_server.client(token=tokens[case.token]) as http:
            answer = send(http, case)
            failures += [f"{case.id}: {problem}" for problem in problems(http, answer, case)]
    assert not failures, "\n".join(failures)


# -- what is accepted at the edges ------------------------------------------------------------------------


def test_a_body_at_the_limits_is_stored_and_listed(api_server: RunningServer) -> None:
    """The limits are not off by one: the deepest and the largest accepted bodies round-trip."""
    deep = widget("deep", json.loads(nested_text(MAX_DEPTH - 1)))  # under the object itself
    envelope = len(json.dumps(widget("big", {"blob": ""})))
    big = widget(
        "big", {"blob": "x" * (LIMIT - envelope)}
    )  # a ConfigMap may not hold 1 MiB; a custom kind may
    with api_server.client() as http:
        assert http.post(m.CRDS_PATH, json=m.WIDGET_CRD).status_code == 201
        stored = http.post(WIDGETS, json=deep)
        assert stored.status_code == 201, stored.text[:300]
        assert http.get(f"{WIDGETS}/deep").json()["spec"] == deep["spec"]
        assert len(json.dumps(big).encode()) == LIMIT
        assert http.post(WIDGETS, content=json.dumps(big).encode()).status_code == 201
        assert len(http.get(f"{WIDGETS}/big").json()["spec"]["blob"]) == LIMIT - envelope
        assert http.get(WIDGETS).status_code == 200


def test_escaped_text_that_only_looks_like_nul_or_a_surrogate_is_stored(api_server: RunningServer) -> None:
    """``\\\\u0000`` is a backslash and "u0000"; a surrogate pair is one character: both are fine."""
    body = configmap_text('"\\\\u0000 \\ud83d\\ude00"').replace(b'"bad"', b'"fine"')
    with api_server.client() as http:
        assert http.post(CONFIGMAPS, content=body).status_code == 201
        assert http.get(f"{CONFIGMAPS}/fine").json()["data"]["k"] == "\\u0000 \U0001f600"


def test_a_non_numeric_resource_version_is_a_bad_request_not_a_conflict(api_server: RunningServer) -> None:
    with api_server.client() as http:
        created = http.post(CONFIGMAPS, json=m.CONFIGMAP).json()
        name = created["metadata"]["name"]
        for rv in ("abc", "-1", "1.0", 1):
            changed = {
                **created,
                "data": {"k": "new"},
                "metadata": {**created["metadata"], "resourceVersion": rv},
            }
            answer = http.put(f"{CONFIGMAPS}/{name}", json=changed)
            assert (answer.status_code, answer.json()["reason"]) == (400, "BadRequest"), rv
        assert http.get(f"{CONFIGMAPS}/{name}").json() == created
        deployment = http.post(DEPLOYMENTS, json=m.DEPLOYMENT).json()
        status = {"metadata": {"resourceVersion": "abc"}, "status": {"replicas": 1}}
        answer = http.put(f"{DEPLOYMENTS}/nginx/status", json=status)
        assert (answer.status_code, answer.json()["reason"]) == (400, "BadRequest")
        assert http.get(f"{DEPLOYMENTS}/nginx").json() == deployment
        stale = {**status, "metadata": {"resourceVersion": "99"}}
        assert http.put(f"{DEPLOYMENTS}/nginx/status", json=stale).status_code == 409  # a number: Conflict


# -- kinds defined by CustomResourceDefinitions ---------------------------------------------------------


def test_a_crd_serves_its_kind_at_its_served_versions_and_scope(api_server: RunningServer) -> None:
    definition = crd(
        versions=[
            {"name": "v1", "served": True, "storage": True},
            {"name": "v1beta1", "served": False, "storage": False},
        ],
        names={"kind": "Widget", "plural": "widgets", "shortNames": ["wdg"]},
    )
    with api_server.client() as http:
        assert http.post(m.CRDS_PATH, json=definition).status_code == 201
        assert http.post(WIDGETS, json=widget("w1", {"size": 1})).status_code == 201
        assert http.get(f"{WIDGETS}/w1").json()["spec"] == {"size": 1}
        not_served = http.get("/apis/example.io/v1beta1/namespaces/default/widgets")
        assert not_served.status_code == 404 and not_served.json()["reason"] == "NotFound"
        assert http.get("/apis/example.io/v2/namespaces/default/widgets").status_code == 404
        assert http.get("/apis/example.io/v1/namespaces/default/gadgets").status_code == 404
        no_status = http.put(f"{WIDGETS}/w1/status", json={"status": {}})
        assert no_status.status_code == 404  # this CRD declares no status subresource
        cluster_path = http.post(
            "/apis/example.io/v1/widgets", json={**widget("w2", {}), "metadata": {"name": "w2"}}
        )
        assert cluster_path.status_code == 400  # a namespaced kind is written under its namespace

        group = http.get("/apis/example.io").json()
        assert [v["version"] for v in group["versions"]] == ["v1"]
        resources = http.get("/apis/example.io/v1").json()["resources"]
        assert [(r["name"], r["namespaced"], r.get("shortNames")) for r in resources] == [
            ("widgets", True, ["wdg"])
        ]
        assert "example.io" in {g["name"] for g in http.get("/apis").json()["groups"]}

        assert http.delete(f"{m.CRDS_PATH}/widgets.example.io").status_code == 200
        assert http.get(WIDGETS).status_code == 404
        assert http.get("/apis/example.io/v1").status_code == 404


def test_a_cluster_scoped_crd_kind_has_no_namespaced_path(api_server: RunningServer) -> None:
    definition = crd(scope="Cluster")
    gadget = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "g1"}, "spec": {}}
    with api_server.client() as http:
        assert http.post(m.CRDS_PATH, json=definition).status_code == 201
        assert http.post("/apis/example.io/v1/widgets", json=gadget).status_code == 201
        assert http.get(f"{WIDGETS}/g1").status_code == 404
        assert (
            http.put("/apis/example.io/v1/widgets/g1/status", json={"status": {"ok": True}}).status_code
            == 200
        )
        listed = http.get("/apis/example.io/v1/widgets").json()
        assert [i["metadata"]["name"] for i in listed["items"]] == ["g1"]


def test_a_crd_cannot_reopen_a_registered_group(api_server: RunningServer) -> None:
    """A CRD naming Karmada's group is stored (it is a valid object) but serves nothing there."""
    karmada = crd(group="policy.karmada.io", metadata={"name": "widgets.policy.karmada.io"})
    with api_server.client() as http:
        assert http.post(m.CRDS_PATH, json=karmada).status_code == 201
        body = {**widget("w1", {}), "apiVersion": "policy.karmada.io/v1"}
        assert (
            http.post("/apis/policy.karmada.io/v1/namespaces/default/widgets", json=body).status_code == 404
        )
        versions = http.get("/apis/policy.karmada.io").json()["versions"]
        assert [v["version"] for v in versions] == ["v1alpha1"]


# -- values stored before strict reading ------------------------------------------------------------------


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_values_stored_before_strict_reading_do_not_break_lists(api_server: RunningServer) -> None:
    """SQLite kept NaN and lone surrogates that older servers accepted; answers carry null and U+FFFD."""
    legacy = {**m.CONFIGMAP, "metadata": {"name": "legacy", "namespace": "default"}}
    legacy["data"] = {"nan": float("nan"), "surrogate": "a\ud800b"}
    context = api_server.process.api_context
    assert context is not None
    with context.uow() as session:
        ObjectRepository(session, "ConfigMap", "v1").create(legacy)
    with api_server.client() as http:
        listed = http.get(CONFIGMAPS)
        assert listed.status_code == 200, listed.text
        assert listed.json()["items"][0]["data"] == {"nan": None, "surrogate": "a\ufffdb"}
        assert http.get(f"{CONFIGMAPS}/legacy").status_code == 200
