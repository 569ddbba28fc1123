"""Shared pieces of the pull-mode agent tests (no tests here): an API server without controllers (so hand-made
Works are not cleaned up as orphans), a Pull cluster joined through the join endpoint, and Work factories."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from federation.apiclient import tls_verify
from federation.cli import server
from federation.members.agent import Agent, AgentConfig
from federation.settings import load_settings
from federation.sim import RunningSimulator
from federation.store.tokens import TokenRepository

WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-{cluster}/works"


@dataclass
class ApiServer:
    process: server.ServerProcess

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def ca_pem(self) -> bytes | None:
        """The CA of the server's HTTPS certificate (what its kubeconfig carries)."""
        return self.process.tls.ca_pem if self.process.tls else None

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token or self.process.admin_token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, verify=tls_verify(self.ca_pem))

    def token(self, role: str, cluster: str | None = None) -> str:
        assert self.process.api_context is not None
        with self.process.api_context.uow() as session:
            _, plaintext = TokenRepository(session).create(f"{role}-{cluster}", role, cluster)
        return plaintext

    def join_pull(self, name: str) -> dict[str, Any]:
        with self.client() as http:
            answer = http.post("/federation/v1/clusters/join", json={"name": name, "syncMode": "Pull"})
        assert answer.status_code == 201, answer.text
        return dict(answer.json())


def start_api_server(tmp_path: Path) -> ApiServer:
    settings = load_settings(data_dir=str(tmp_path / "data"), api={"port": 0})
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    return ApiServer(process)


def deployment_manifest(name: str, replicas: int, namespace: str = "default") -> dict[str, Any]:
    labels = {"app": name}
    container = {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def work(cluster: str, name: str, *manifests: dict[str, Any], suspend: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"workload": {"manifests": list(manifests)}}
    if suspend:
        spec["suspendDispatching"] = True
    return {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": name, "namespace": f"karmada-es-{cluster}"},
        "spec": spec,
    }


def put_work(api: ApiServer, body: dict[str, Any]) -> dict[str, Any]:
    meta = body["metadata"]
    with api.client() as http:
        answer = http.put(
            f"/apis/work.karmada.io/v1alpha1/namespaces/{meta['namespace']}/works/{meta['name']}", json=body
        )
    assert answer.status_code in (200, 201), answer.text
    return dict(answer.json())


def get_work(api: ApiServer, cluster: str, name: str) -> dict[str, Any]:
    with api.client() as http:
        answer = http.get(f"{WORKS.format(cluster=cluster)}/{name}")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def delete_work(api: ApiServer, cluster: str, name: str) -> None:
    with api.client() as http:
        answer = http.delete(f"{WORKS.format(cluster=cluster)}/{name}")
    assert answer.status_code == 200, answer.text


def make_agent(api: ApiServer, sim: RunningSimulator, cluster: str, token: str, **overrides: Any) -> Agent:
    config = AgentConfig(
        cluster=cluster,
        server=api.url,
        token=token,
        kubeconfig=sim.kubeconfig,
        ca_pem=api.ca_pem,
        **overrides,
    )
    return Agent(config)


def tombstone(api: ApiServer, cluster: str, name: str) -> dict[str, Any]:
    """Mark a Work for deletion the way the execution controller does (through the store)."""
    from federation.store.works import WorkRepository

    assert api.process.api_context is not None
    with api.process.api_context.uow() as session:
        works = WorkRepository(session).objects
        current = works.get(f"karmada-es-{cluster}", name)
        assert current is not None
        current["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        return dict(works.replace(current))
