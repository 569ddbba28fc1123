"""Shared harness for the execution / work sync / binding status tests (no tests of its own).

A migrated database on each backend, a secret box, member access to real simulators (HTTPS sockets), the
four reconcilers on a FakeClock, and plain-function factories for clusters, templates and bindings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import Engine, event

from federation.controllers.binding_status import BindingStatusController
from federation.controllers.execution import ExecutionController
from federation.controllers.members_access import MemberAccess
from federation.controllers.runtime import FakeClock
from federation.controllers.work_status import WorkStatusCollector
from federation.controllers.work_sync import WorkSync
from federation.model.binding import binding_name
from federation.settings import MemberSettings
from federation.sim import RunningSimulator, run_simulator_in_thread
from federation.store import migrate
from federation.store.bindings import BindingRepository
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, make_engine
from federation.store.repository import ObjectRepository
from federation.store.works import WorkRepository
from tests.members.helpers import deployment, make_config

T = TypeVar("T")


class Harness:
    def __init__(self, database_url: str) -> None:
        migrate.upgrade(database_url)
        self.engine = make_engine(database_url)
        self.uow = UnitOfWork.for_engine(self.engine)
        self.box = SecretBox(generate_key())
        self.members = MemberAccess(
            self.uow, self.box, MemberSettings(request_timeout_seconds=3, probe_timeout_seconds=2)
        )
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.execution = ExecutionController(self.uow, self.clock)
        self.sync = WorkSync(
            self.uow,
            self.clock,
            "test-owner",
            self.members,
            backoff_initial_seconds=1,
            backoff_max_seconds=60,
        )
        self.collector = WorkStatusCollector(self.uow, self.clock, self.members)
        self.status = BindingStatusController(self.uow, self.clock)

    def close(self) -> None:
        self.collector.close()
        self.members.close()
        self.engine.dispose()

    # -- driving -------------------------------------------------------------------------------------

    def round(self) -> None:
        """One pass of every reconciler, in pipeline order."""
        self.execution.reconcile()
        self.sync.reconcile()
        self.collector.reconcile()
        self.status.reconcile()

    def until(self, probe: Callable[[], T], timeout: float = 15.0, what: str = "") -> T:
        """Run rounds until ``probe()`` is truthy; fail at the deadline (no bare sleeps)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            self.round()
            last = probe()
            if last:
                return last
            time.sleep(0.05)
        pytest.fail(f"timed out after {timeout}s waiting for {what or probe}; last value: {last!r}")

    # -- factories -----------------------------------------------------------------------------------

    def add_cluster(self, name: str, sim: RunningSimulator | None = None, sync_mode: str = "Push") -> None:
        cluster = {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"syncMode": sync_mode, "apiEndpoint": sim.url if sim else f"https://{name}.example"},
        }
        with self.uow() as session:
            clusters = ClusterRepository(session)
            clusters.objects.create(cluster)
            if sim is not None:
                clusters.set_kubeconfig(name, sim.kubeconfig, self.box)

    def add_template(self, manifest: dict[str, Any]) -> dict[str, Any]:
        with self.uow() as session:
            return ObjectRepository(session, manifest["kind"], manifest["apiVersion"]).create(manifest)

    def update_template(self, manifest: dict[str, Any]) -> dict[str, Any]:
        with self.uow() as session:
            return ObjectRepository(session, manifest["kind"], manifest["apiVersion"]).replace(manifest)

    def delete_template(self, manifest: dict[str, Any]) -> None:
        meta = manifest["metadata"]
        with self.uow() as session:
            ObjectRepository(session, manifest["kind"], manifest["apiVersion"]).delete(
                meta.get("namespace"), meta["name"]
            )

    def add_binding(
        self, template: dict[str, Any], clusters: list[dict[str, Any]], **spec: Any
    ) -> dict[str, Any]:
        meta = template["metadata"]
        namespace = meta.get("namespace") or ""
        replicas = int((template.get("spec") or {}).get("replicas") or 0)
        body: dict[str, Any] = {
            "resource": {
                "apiVersion": template["apiVersion"],
                "kind": template["kind"],
                "name": meta["name"],
                "uid": meta["uid"],
                **({"namespace": namespace} if namespace else {}),
            },
            "clusters": clusters,
            **({"replicas": replicas} if replicas else {}),
            **spec,
        }
        binding = {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding" if namespace else "ClusterResourceBinding",
            "metadata": {
                "name": binding_name(meta["name"], template["kind"]),
                **({"namespace": namespace} if namespace else {}),
            },
            "spec": body,
        }
        with self.uow() as session:
            return BindingRepository(session).objects(namespace).create(binding)

    def edit_binding(self, binding: dict[str, Any], **spec: Any) -> dict[str, Any]:
        meta = binding["metadata"]
        with self.uow() as session:
            repository = BindingRepository(session)
            current = repository.get(meta.get("namespace") or "", meta["name"])
            assert current is not None
            current["spec"].update(spec)
            current["spec"] = {k: v for k, v in current["spec"].items() if v is not None}
            return repository.objects(meta.get("namespace") or "").replace(current)

    def delete_binding(self, binding: dict[str, Any]) -> None:
        meta = binding["metadata"]
        with self.uow() as session:
            BindingRepository(session).objects(meta.get("namespace") or "").delete(
                meta.get("namespace") or "", meta["name"]
            )

    # -- reads ---------------------------------------------------------------------------------------

    def binding(self, binding: dict[str, Any]) -> dict[str, Any] | None:
        meta = binding["metadata"]
        with self.uow() as session:
            return BindingRepository(session).get(meta.get("namespace") or "", meta["name"])

    def template(self, template: dict[str, Any]) -> dict[str, Any] | None:
        meta = template["metadata"]
        with self.uow() as session:
            return ObjectRepository(session, template["kind"], template["apiVersion"]).get(
                meta.get("namespace"), meta["name"]
            )

    def works(self) -> dict[str, dict[str, Any]]:
        """cluster name → Work, for every Work in the store."""
        with self.uow() as session:
            rows, _ = WorkRepository(session).objects.list()
        return {w["metadata"]["namespace"].removeprefix("karmada-es-"): w for w in rows}

    def versions(self) -> dict[tuple[str, str, str], str]:
        """(kind, namespace, name) → resourceVersion of every binding, Work and template."""
        found: dict[tuple[str, str, str], str] = {}
        with self.uow() as session:
            for repository in (
                WorkRepository(session).objects,
                BindingRepository(session).objects("default"),
                BindingRepository(session).objects(""),
                ObjectRepository(session, "Deployment", "apps/v1"),
                ObjectRepository(session, "ConfigMap", "v1"),
            ):
                for obj in repository.list()[0]:
                    meta = obj["metadata"]
                    found[(obj["kind"], meta.get("namespace", ""), meta["name"])] = meta["resourceVersion"]
        return found


def member_object(
    sim: RunningSimulator, kind: str, name: str, namespace: str = "default"
) -> dict[str, Any] | None:
    """The object as the member holds it, read through the member's own API."""
    from federation.members.client import KubernetesMemberClient

    api_version = "apps/v1" if kind in ("Deployment", "StatefulSet") else "v1"
    client = KubernetesMemberClient(sim.name, sim.kubeconfig)
    try:
        return client.get(api_version, kind, namespace, name)
    finally:
        client.close()


def ready(sim: RunningSimulator, name: str, replicas: int) -> bool:
    found = member_object(sim, "Deployment", name)
    if found is None:
        return False
    status = found.get("status") or {}
    return found["spec"]["replicas"] == replicas and status.get("readyReplicas", 0) == replicas


def nginx(name: str = "nginx", replicas: int = 3) -> dict[str, Any]:
    return deployment(name, replicas)


@contextmanager
def count_writes(engine: Engine) -> Iterator[list[str]]:
    """INSERT/UPDATE/DELETE statements the engine sends inside the block."""
    writes: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        verb = statement.lstrip().split(" ", 1)[0].upper()
        if verb in ("INSERT", "UPDATE", "DELETE"):
            writes.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield writes
    finally:
        event.remove(engine, "before_cursor_execute", record)


@pytest.fixture
def harness(database_url: str, tmp_path: Path) -> Iterator[Harness]:
    running = Harness(database_url)
    yield running
    running.close()


@pytest.fixture
def start_sim() -> Iterator[Callable[..., RunningSimulator]]:
    running: list[RunningSimulator] = []

    def start(name: str, **overrides: Any) -> RunningSimulator:
        sim = run_simulator_in_thread(make_config(name=name, **overrides))
        running.append(sim)
        return sim

    yield start
    for sim in running:
        sim.stop()
