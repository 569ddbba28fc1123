"""Concurrent writers against a running server: every last write reaches its binding, on both backends.

N writer threads x M rounds update Deployments over real HTTP while the detector runs in the same
process. Afterwards each binding is checked object by object: its ``spec.replicas`` is the replica count
of the template's last write. Before the dirty-flag protocol was fixed, 5-10% of the bindings kept an
old count for good (lost wake-ups).
"""

from __future__ import annotations

import copy
import threading
import time

import pytest

from tests.api import manifests as m
from tests.conftest import start_server

WRITERS = 10
ROUNDS = 5
PER_WRITER = 2
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
POLICY = {
    **m.PROPAGATION_POLICY,
    "metadata": {"name": "all-deployments", "namespace": "default"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
        "placement": {"clusterAffinity": {"clusterNames": ["member1"]}},
    },
}


def _deployment(name: str, replicas: int) -> dict:
    body = copy.deepcopy(m.DEPLOYMENT)
    body["metadata"] = {"name": name, "namespace": "default", "labels": {"app": name}}
    body["spec"]["replicas"] = replicas
    body["spec"]["selector"] = {"matchLabels": {"app": name}}
    body["spec"]["template"]["metadata"] = {"labels": {"app": name}}
    return body


@pytest.mark.slow
def test_every_last_write_reaches_its_binding(tmp_path, database_url):
    server = start_server(tmp_path, database_url=database_url)
    names = [f"app-{w}-{i}" for w in range(WRITERS) for i in range(PER_WRITER)]
    try:
        with server.client() as http:
            assert (
                http.post(
                    "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies", json=POLICY
                ).status_code
                == 201
            )
            for name in names:
                assert http.post(DEPLOYMENTS, json=_deployment(name, 1)).status_code == 201
        last = _write_concurrently(server, names)
        assert _converged(server, last, deadline=time.monotonic() + 90) == {}
    finally:
        server.process.stop()


def _write_concurrently(server, names: list[str]) -> dict[str, int]:
    """Each writer owns PER_WRITER Deployments and PUTs them ROUNDS times; returns the last replicas."""
    barrier = threading.Barrier(WRITERS)
    last: dict[str, int] = {}
    failures: list[str] = []

    def writer(index: int) -> None:
        mine = names[index * PER_WRITER : (index + 1) * PER_WRITER]
        with server.client() as http:
            barrier.wait()
            for round_ in range(ROUNDS):
                for name in mine:
                    replicas = 2 + round_ * 10 + index
                    response = http.put(f"{DEPLOYMENTS}/{name}", json=_deployment(name, replicas))
                    if response.status_code != 200:
                        failures.append(f"{name}: {response.status_code} {response.text}")
                    last[name] = replicas

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    return last


def _converged(server, last: dict[str, int], deadline: float) -> dict[str, object]:
    """Poll until every binding carries its template's last replicas; returns the ones that do not."""
    behind: dict[str, object] = dict(last)
    while behind and time.monotonic() < deadline:
        with server.client() as http:
            items = http.get(BINDINGS).json()["items"]
        seen = {b["spec"]["resource"]["name"]: b["spec"].get("replicas") for b in items}
        behind = {name: seen.get(name) for name, want in last.items() if seen.get(name) != want}
        if behind:
            time.sleep(0.2)
    return behind
