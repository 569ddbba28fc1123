"""What one API call costs in SQL (issue 12: at most 10 statements per binding end to end), on both backends.

A create through the HTTP API, as the official ``kubernetes`` client sends it (POST with a bearer token), is
the write and nothing else: the next global revision (its resourceVersion), its change-log entry (the watch
event) and the INSERT. Nothing is read first:
- the token comes from the process's token cache (``store.tokens.TokenCache``; its guarantees are pinned in
  ``test_token_cache``): one lookup per token per ``api.token_cache_seconds``, not one per request;
- the name's uniqueness is the table's unique key: a taken name fails the INSERT and is the same 409
  AlreadyExists as before, with nothing written;
- authorization, admission and validation need no SQL for these kinds; API writes are not fenced by the
  leader lease (only controllers' are); Secret data is sealed in memory before the INSERT.

A replace, a patch, a scale or a status write reads the row once (the resourceVersion precondition,
managedFields and generation need the current object) and hands it to the write. A GET is one SELECT.
These tests pin the exact statements; a change that adds one must say why here.

The cache's clock is frozen in these tests, so the token looked up by the warm-up request stays fresh however
slow the machine is. No list is requested: a list starts the watch hub, whose polls would be counted too.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as kconfig
from sqlalchemy import Engine, text

from federation.cli import server
from federation.settings import load_settings
from federation.store.tokens import TokenCache
from tests.api import manifests as m
from tests.conftest import RunningServer
from tests.store.support import FakeClock, count_statements

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
SECRETS = "/api/v1/namespaces/default/secrets"
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}

NEXT_REVISION = "next revision"  # Postgres: nextval of the sequence; SQLite: the counter row's upsert
TEMPLATE_CREATE = [NEXT_REVISION, "INSERT change_log", "INSERT resource_templates"]
TEMPLATE_READ = ["SELECT resource_templates"]
TEMPLATE_UPDATE = [*TEMPLATE_READ, NEXT_REVISION, "INSERT change_log", "UPDATE resource_templates"]


def shape(statement: str) -> str:
    """A statement as "VERB table" (the first table it names); drawing a revision as NEXT_REVISION."""
    words = statement.split()
    if "nextval(" in statement or words[:3] == ["INSERT", "INTO", "revision_counter"]:
        return NEXT_REVISION
    verb = words[0].upper()
    after = {"INSERT": "INTO", "DELETE": "FROM", "SELECT": "FROM"}.get(verb)
    table = words[1] if after is None else words[[w.upper() for w in words].index(after) + 1]
    return f"{verb} {table}"


@dataclass
class Api:
    running: RunningServer
    engine: Engine
    http: httpx.Client

    def cost(self, call: Any) -> tuple[Any, list[str]]:
        """``call()``'s answer and the shapes of the statements it sent; the statements themselves are
        printed (``pytest -s``) to read what a shape stands for."""
        with count_statements(self.engine) as log:
            answer = call()
        for statement in log.statements:
            print(" ".join(statement.split())[:200])
        return answer, [shape(s) for s in log.statements]


@pytest.fixture
def api(tmp_path: Path, database_url: str) -> Iterator[Api]:
    """The API alone (no controllers, so only the test's requests touch the database), its token cache on a
    frozen clock, and the admin token already looked up once (and its last-used time written)."""
    settings = load_settings(data_dir=str(tmp_path / "data"), database_url=database_url, api={"port": 0})
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    running = RunningServer(process)
    context = process.api_context
    assert context is not None
    context.tokens = TokenCache(timedelta(seconds=5), clock=FakeClock(datetime.now(UTC)))
    try:
        with running.client() as http:
            assert http.get(f"{DEPLOYMENTS}/warm-up").status_code == 404
            yield Api(running, context.engine, http)
    finally:
        process.stop()


def kubernetes_apps(running: RunningServer) -> k8s.AppsV1Api:
    """The official client, configured from the kubeconfig `serve` wrote (its CA, URL and admin token)."""
    return k8s.AppsV1Api(kconfig.new_client_from_config(config_file=str(running.kubeconfig)))


def test_a_create_is_its_revision_its_change_log_entry_and_its_insert(api: Api) -> None:
    apps = kubernetes_apps(api.running)
    try:
        created, statements = api.cost(lambda: apps.create_namespaced_deployment("default", m.DEPLOYMENT))
    finally:
        apps.api_client.close()
    assert statements == TEMPLATE_CREATE
    revision = int(created.metadata.resource_version)
    with api.engine.connect() as connection:
        logged = connection.execute(
            text("SELECT event, kind, name FROM change_log WHERE revision = :revision"),
            {"revision": revision},
        ).one()
    assert tuple(logged) == ("ADDED", "Deployment", "nginx")  # the watch event, at the object's revision

    answer, statements = api.cost(lambda: api.http.post(POLICIES, json=m.PROPAGATION_POLICY))
    assert answer.status_code == 201, answer.text
    assert statements == [NEXT_REVISION, "INSERT change_log", "INSERT propagation_policies"]
    assert int(answer.json()["metadata"]["resourceVersion"]) == revision + 1


def test_a_taken_name_is_the_same_409_and_writes_nothing(api: Api) -> None:
    first = api.http.post(DEPLOYMENTS, json=m.DEPLOYMENT).json()
    other = copy.deepcopy(m.DEPLOYMENT)
    other["spec"]["replicas"] = 7
    again, statements = api.cost(lambda: api.http.post(DEPLOYMENTS, json=other))
    assert statements == TEMPLATE_CREATE  # the INSERT is the check; it fails and everything rolls back
    assert again.status_code == 409
    assert again.json() == {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": 'deployments.apps "nginx" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "nginx", "kind": "deployments.apps"},
        "code": 409,
    }
    assert api.http.get(f"{DEPLOYMENTS}/nginx").json() == first
    with api.engine.connect() as connection:
        events = connection.execute(text("SELECT event FROM change_log WHERE name = 'nginx'")).scalars().all()
    assert events == ["ADDED"]  # the failed create left no event behind


def test_a_secret_is_sealed_at_no_extra_statement(api: Api) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "default"},
        "type": "Opaque",
        "stringData": {"password": "hunter2-plaintext"},
    }
    answer, statements = api.cost(lambda: api.http.post(SECRETS, json=secret))
    assert answer.status_code == 201, answer.text
    assert statements == TEMPLATE_CREATE
    with api.engine.connect() as connection:
        stored = connection.execute(
            text("SELECT extra FROM resource_templates WHERE name = 'db'")
        ).scalar_one()
        logged = connection.execute(text("SELECT object FROM change_log WHERE name = 'db'")).scalar_one()
    for at_rest in (stored, logged):
        assert "hunter2" not in str(at_rest) and "aHVudGVyMi" not in str(at_rest)


def test_replace_patch_read_and_delete_read_the_row_once(api: Api) -> None:
    deployment = copy.deepcopy(m.DEPLOYMENT)
    answer, statements = api.cost(lambda: api.http.put(f"{DEPLOYMENTS}/nginx", json=deployment))
    assert answer.status_code == 201, answer.text
    assert statements == [*TEMPLATE_READ, *TEMPLATE_CREATE]  # create-or-replace: is it there?

    current, statements = api.cost(lambda: api.http.get(f"{DEPLOYMENTS}/nginx"))
    assert current.status_code == 200 and statements == TEMPLATE_READ

    body = current.json()
    body["spec"]["replicas"] = 3
    answer, statements = api.cost(lambda: api.http.put(f"{DEPLOYMENTS}/nginx", json=body))
    assert answer.status_code == 200, answer.text
    assert statements == TEMPLATE_UPDATE

    stale, statements = api.cost(lambda: api.http.put(f"{DEPLOYMENTS}/nginx", json=body))
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"
    assert statements == TEMPLATE_READ  # refused on the row it read: nothing drawn, nothing written

    patch = {"spec": {"replicas": 4}}
    answer, statements = api.cost(
        lambda: api.http.patch(f"{DEPLOYMENTS}/nginx", json=patch, headers=MERGE_PATCH)
    )
    assert answer.status_code == 200 and answer.json()["spec"]["replicas"] == 4
    assert statements == TEMPLATE_UPDATE

    scale = {"spec": {"replicas": 5}}
    answer, statements = api.cost(
        lambda: api.http.patch(f"{DEPLOYMENTS}/nginx/scale", json=scale, headers=MERGE_PATCH)
    )
    assert answer.status_code == 200 and answer.json()["spec"]["replicas"] == 5
    assert statements == TEMPLATE_UPDATE

    status = {"status": {"replicas": 5}}
    answer, statements = api.cost(
        lambda: api.http.patch(f"{DEPLOYMENTS}/nginx/status", json=status, headers=MERGE_PATCH)
    )
    assert answer.status_code == 200 and answer.json()["status"] == {"replicas": 5}
    assert statements == TEMPLATE_UPDATE

    answer, statements = api.cost(lambda: api.http.delete(f"{DEPLOYMENTS}/nginx"))
    assert answer.status_code == 200, answer.text
    assert statements == [
        *TEMPLATE_READ,
        "DELETE resource_bindings",  # its bindings go with it (store.dependents)
        "DELETE resource_templates",  # RETURNING the last state, for the DELETED event
        NEXT_REVISION,
        "INSERT change_log",
    ]


def test_a_put_that_creates_and_loses_the_race_for_the_name_is_409(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row read found nothing, then a concurrent create took the name before the INSERT: Kubernetes'
    409 AlreadyExists, the winner's object untouched."""
    from federation.api import objects

    first = api.http.post(DEPLOYMENTS, json=m.DEPLOYMENT).json()
    monkeypatch.setattr(objects, "read", lambda session, req: objects.Read(None))  # read before the winner
    other = copy.deepcopy(m.DEPLOYMENT)
    other["spec"]["replicas"] = 7
    lost = api.http.put(f"{DEPLOYMENTS}/nginx", json=other)
    assert lost.status_code == 409, lost.text
    assert lost.json()["reason"] == "AlreadyExists"
    monkeypatch.undo()
    assert api.http.get(f"{DEPLOYMENTS}/nginx").json() == first


def test_a_pull_agents_lease_renewal_is_one_update(api: Api) -> None:
    """1,000 pull agents renew 100 times a second: a renewal is one UPDATE ... RETURNING that also checks the
    cluster is registered; only the first renewal (or one for an unknown cluster) reads and inserts more."""
    joined = api.http.post("/federation/v1/clusters/join", json={"name": "edge", "syncMode": "Pull"})
    assert joined.status_code == 201, joined.text
    path = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/edge"
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "edge", "namespace": "karmada-cluster"},
        "spec": {"holderIdentity": "edge", "leaseDurationSeconds": 40},
    }
    first, statements = api.cost(lambda: api.http.put(path, json=body))
    assert first.status_code == 200, first.text
    assert statements == ["UPDATE leases", "SELECT clusters", "INSERT leases", "UPDATE leases"]
    again, statements = api.cost(lambda: api.http.put(path, json=body))
    assert again.status_code == 200, again.text
    assert statements == ["UPDATE leases"]
    renewed = again.json()["spec"]
    assert renewed["renewTime"] >= first.json()["spec"]["renewTime"]
    kept = ("acquireTime", "leaseTransitions", "holderIdentity")  # the same holder renewed: no transition
    assert {k: renewed[k] for k in kept} == {k: first.json()["spec"][k] for k in kept}
    gone = {**body, "metadata": {"name": "gone", "namespace": "karmada-cluster"}}
    missing, statements = api.cost(lambda: api.http.put(path.replace("edge", "gone"), json=gone))
    assert missing.status_code == 404 and statements == ["UPDATE leases", "SELECT clusters"]
