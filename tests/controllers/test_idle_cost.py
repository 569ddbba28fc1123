"""Idle is nearly free (issue 12): every controller of `serve`, assembled as `serve` assembles them, over a
store whose bindings are all in sync with real simulators (HTTPS), driven by the runner's interval ticks
alone (no wake-ups: what a replica sees of another replica's writes) on a fake clock.

What is pinned: one interval tick of every probed controller costs one SELECT together, whatever the
number of bindings, and no member call; the pollers cost a fixed number of statements per pass, and of
member requests (cluster status one per member, its probe: nodes and pods are watched; work status none:
it watches); and writes nobody woke anyone for still reach the members.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from federation.api.join import JoinRequest, join_cluster
from federation.controllers import cluster_status
from federation.controllers.assembly import ControllerDeps, build_reconcilers
from federation.controllers.members_access import MemberAccess
from federation.controllers.runtime import ControllerRunner, FakeClock, leader_fence
from federation.members import client as member_client
from federation.members import probe as member_probe
from federation.settings import Settings, load_settings
from federation.sim import RunningSimulator
from federation.store import migrate
from federation.store.bindings import BindingRepository
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, make_engine
from federation.store.repository import ObjectRepository
from federation.store.works import WorkRepository
from tests.controllers.test_execution_support import start_sim
from tests.members.helpers import deployment, wait_for
from tests.store.support import count_statements

__all__ = ["start_sim"]  # a fixture, re-exported for pytest

CLUSTERS = ("m1", "m2")
# The controllers whose interval ticks ask a probe first: all but the pollers and the periodic jobs.
PROBED = {
    "detector",
    "scheduler",
    "workload-rebalancer",
    "taint-manager",
    "application-failover",
    "graceful-eviction",
    "execution",
    "work-sync",
    "binding-status",
}
POLICY = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "everywhere", "namespace": "default"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
        "placement": {
            "clusterAffinity": {"clusterNames": list(CLUSTERS)},
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
        },
    },
}


@dataclass
class MemberCalls:
    """Requests the control plane sent to members (kube API calls and health probes), by path."""

    paths: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.paths)


@dataclass
class Monotonic:
    """The runner's monotonic clock, moved by hand: probe verdicts are shared while it stands still."""

    at: float = 1000.0

    def __call__(self) -> float:
        return self.at


class Federation:
    """A migrated store, member access, every reconciler of `serve` and a runner that leads (not started:
    the test ticks the reconcilers itself, so nothing is woken and every pass goes through the gate)."""

    def __init__(self, database_url: str, tmp_path: Path) -> None:
        migrate.upgrade(database_url)
        self.engine = make_engine(database_url)
        self.uow = UnitOfWork.for_engine(self.engine)
        self.settings: Settings = load_settings(data_dir=str(tmp_path), database_url=database_url)
        self.box = SecretBox(generate_key())
        self.members = MemberAccess(self.uow, self.box, self.settings.members)
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.monotonic = Monotonic()
        identity = "idle-test"
        fenced = self.uow.guarded(leader_fence(identity, self.clock))
        deps = ControllerDeps(fenced, self.settings, self.clock, identity, self.box, self.members)
        self.reconcilers = build_reconcilers(deps)
        self.runner = ControllerRunner(
            self.uow,
            self.reconcilers,
            lease_seconds=3600,  # the fake clock runs ahead of the lease's own: never let it lapse here
            identity=identity,
            clock=self.clock,
            monotonic=self.monotonic,
        )
        assert self.runner.hold_lease()

    def close(self) -> None:
        self.runner.stop()  # closes the reconcilers (the member informers)
        self.members.close()
        self.engine.dispose()

    def join(self, sim: RunningSimulator) -> None:
        join_cluster(self.uow, self.box, self.settings.members, JoinRequest(sim.name, sim.kubeconfig))

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self.uow() as session:
            return ObjectRepository(session, obj["kind"], obj["apiVersion"]).create(obj)

    def delete(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        with self.uow() as session:
            ObjectRepository(session, obj["kind"], obj["apiVersion"]).delete(
                meta.get("namespace"), meta["name"]
            )

    def tick(self, names: set[str] | None = None) -> None:
        """One interval tick of each reconciler (of ``names``), in assembly order; then time moves on."""
        for reconciler in self.reconcilers:
            if names is None or reconciler.name in names:
                self.runner.tick(reconciler.name)
        self.clock.advance(1)
        self.monotonic.at += 1

    def ticks_until(self, done: Callable[[], bool], what: str, limit: int = 120) -> None:
        """Ticks until ``done()`` (a bound on ticks, not on time: the fake clock moves a second a tick)."""
        for _ in range(limit):
            self.tick()
            if done():
                return
        pytest.fail(f"not {what} after {limit} ticks")

    def fully_applied(self, names: list[str]) -> bool:
        with self.uow() as session:
            bindings = [BindingRepository(session).get("default", f"{n}-deployment") for n in names]
        return all(b is not None and _fully_applied(b) for b in bindings)

    def works(self) -> int:
        with self.uow() as session:
            return len(WorkRepository(session).objects.list()[0])

    def settle(self) -> None:
        """Let the last writes be read, every change feed's overlap close (its watermark stood still for
        longer than the overlap) and every busy pass be followed by an idle one."""
        for _ in range(3):
            self.tick()
        self.clock.advance(30)
        for _ in range(3):
            self.tick()


def _fully_applied(binding: dict[str, Any]) -> bool:
    conditions = (binding.get("status") or {}).get("conditions") or []
    return any(c["type"] == "FullyApplied" and c["status"] == "True" for c in conditions)


@contextmanager
def member_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemberCalls]:
    """Every kube API request of every member client, and every health probe, inside the block."""
    calls = MemberCalls()
    request, probe_get = member_client.KubernetesMemberClient.request, member_probe._get

    def recorded_request(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        calls.paths.append(f"{method} {path}")
        return request(self, method, path, **kwargs)

    def recorded_probe(client: Any, path: str, started: float) -> Any:
        calls.paths.append(f"GET {path}")
        return probe_get(client, path, started)

    with monkeypatch.context() as patched:
        patched.setattr(member_client.KubernetesMemberClient, "request", recorded_request)
        patched.setattr(member_probe, "_get", recorded_probe)
        yield calls


@pytest.fixture
def federation(database_url: str, tmp_path: Path) -> Iterator[Federation]:
    running = Federation(database_url, tmp_path)
    yield running
    running.close()


def in_sync(federation: Federation, start_sim: Callable[..., RunningSimulator], count: int) -> list[str]:
    """``count`` Deployments placed on both members, applied and reported; the names."""
    for name in CLUSTERS:
        federation.join(start_sim(name, ready_delay=0))
    federation.put(POLICY)
    names = [f"app{i}" for i in range(count)]
    for name in names:
        federation.put(deployment(name, 1))
    federation.ticks_until(lambda: federation.fully_applied(names), "FullyApplied")
    federation.settle()
    return names


@pytest.mark.parametrize("count", [2, 12])
def test_an_idle_tick_of_every_probed_controller_is_one_select_and_no_member_call(
    federation: Federation,
    start_sim: Callable[..., RunningSimulator],
    monkeypatch: pytest.MonkeyPatch,
    count: int,
) -> None:
    in_sync(federation, start_sim, count)
    assert set(federation.runner.gate.probed) == PROBED
    evaluations = federation.runner.gate.evaluations
    with count_statements(federation.engine) as log, member_calls(monkeypatch) as calls:
        federation.tick(PROBED)
    assert log.count == 1, log.statements  # the probes of all nine, in one SELECT
    assert log.statements[0].lstrip().upper().startswith("SELECT")
    assert calls.count == 0
    assert federation.runner.gate.evaluations == evaluations + 1


@pytest.mark.parametrize("count", [2, 12])
def test_idle_pollers_cost_a_fixed_number_of_statements_and_one_request_per_member(
    federation: Federation,
    start_sim: Callable[..., RunningSimulator],
    monkeypatch: pytest.MonkeyPatch,
    count: int,
) -> None:
    in_sync(federation, start_sim, count)
    with count_statements(federation.engine) as log, member_calls(monkeypatch) as calls:
        federation.runner.tick("work-status")
    # The Works written since the last read (none), the Push clusters, the members' credentials; the
    # members' Deployments are followed by watches (informers), so no member call.
    assert log.count == 3, log.statements
    assert calls.paths == []
    # Cluster status between two collections of version and apiEnablements: the probe alone, once its
    # informers on the members' nodes and pods have listed them (on their own threads, in real time: a
    # deadline, not a number of ticks); until then a pass LISTs nodes and pods as it would without them.
    status = next(r for r in federation.reconcilers if r.name == "cluster-status")
    assert isinstance(status, cluster_status.ClusterStatusController)
    wait_for(
        lambda: all((w := status.informers.get(n)) is not None and w.synced for n in CLUSTERS),
        what="cluster status' informers synced",
    )
    passes = []
    for _ in range(cluster_status.DISCOVERY_EVERY_PASSES):
        with count_statements(federation.engine) as log, member_calls(monkeypatch) as calls:
            federation.runner.tick("cluster-status")
        federation.clock.advance(10)
        passes.append((log.count, calls.paths))
    # Reads of the clusters, the names with credentials, the leases and the credentials; the heartbeat of
    # the healthy members' leases (ensure, renew) and the leader fence: the same for every pass.
    assert {s for s, _ in passes} == {7}
    listed = [p for _, paths in passes for p in paths if p.endswith(("/nodes", "/pods"))]
    assert listed == []  # nodes and pods come from the informers
    # One pass in DISCOVERY_EVERY_PASSES also collects version and discovery; every other one probes.
    per_member = sorted(len(paths) // len(CLUSTERS) for _, paths in passes)
    assert per_member[:-1] == [1] * (cluster_status.DISCOVERY_EVERY_PASSES - 1), passes
    assert per_member[-1] > 1


def test_writes_nobody_woke_a_controller_for_reach_the_members(
    federation: Federation, start_sim: Callable[..., RunningSimulator]
) -> None:
    names = in_sync(federation, start_sim, 2)
    # Written as another replica would write it: no wake-up reaches this runner, only its ticks.
    federation.put(deployment("late", 1))
    federation.ticks_until(lambda: federation.fully_applied([*names, "late"]), "the late one FullyApplied")
    works = federation.works()
    federation.delete(deployment("late", 1))  # its binding goes with it; its Works are orphans
    federation.ticks_until(lambda: federation.works() == works - len(CLUSTERS), "its Works gone")


def test_a_busy_or_woken_pass_runs_without_asking_and_an_idle_one_asks(
    federation: Federation, start_sim: Callable[..., RunningSimulator]
) -> None:
    in_sync(federation, start_sim, 1)
    gate = federation.runner.gate
    evaluations = gate.evaluations
    federation.tick({"detector"})
    assert gate.evaluations == evaluations + 1  # idle: asked its probe (and skipped the pass)
    gate.wake("detector")
    with count_statements(federation.engine) as log:
        federation.tick({"detector"})
    assert gate.evaluations == evaluations + 1  # woken: ran without asking
    assert log.count > 1  # its claims (a pass, not a probe)
    federation.tick({"detector"})
    assert gate.evaluations == evaluations + 2


def test_verdicts_are_shared_only_while_fresh(federation: Federation) -> None:
    gate = federation.runner.gate
    for name in PROBED:  # each has run once (the first pass never asks)
        federation.runner.tick(name)
    evaluations = gate.evaluations
    for name in itertools.islice(itertools.cycle(sorted(PROBED)), 2 * len(PROBED)):
        federation.runner.tick(name)
    assert gate.evaluations == evaluations + 1  # the monotonic clock stood still: one SELECT for all
    federation.monotonic.at += 1
    federation.runner.tick("detector")
    assert gate.evaluations == evaluations + 2
