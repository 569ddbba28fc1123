"""A restart of the cluster-status controller (a new instance on the same database: no debounce cache, no
cached member clients, no reusable discovery) with nothing changed on the members writes nothing the
scheduler reacts to: the stored Cluster keeps its resourceVersion, scheduling fingerprint and queue count,
and only the lease is renewed.

Two ways a restart used to change a member's stored Ready (issue 12, "cold start"):
- at a start every controller (cluster status, work sync, work status) asks for the same member's client
  at once; each built one, and the pool stored the last built and closed the one it had already handed
  out, so cluster status probed through a closed client (``StatusCollectionFailed``: "Cannot send a
  request, as the client has been closed."), published at once;
- a failed first observation after a restart was published at once (the in-memory debounce cache is
  empty), where the same failure an instant before the restart would have waited for the failure
  threshold. It now waits for a cluster whose lease an earlier pass renewed; a just-joined cluster's
  first look is still published as it is (``test_cluster_status``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from federation.controllers.cluster_status import DISCOVERY_EVERY_PASSES, ClusterStatusController
from federation.controllers.members_access import MemberAccess
from federation.members.client import MemberClient
from federation.members.probe import ProbeResult
from federation.sim import RunningSimulator
from federation.store.leases import LeaseRepository
from federation.store.tables import ClusterRow
from tests.controllers.test_cluster_status import Harness, ready, taint_keys

WAIT = 30.0  # a guard against a hang, never an assertion about time
DISCOVERY_PASSES = DISCOVERY_EVERY_PASSES + 1  # a run of passes with a rediscovery in it


@pytest.fixture
def harness(database_url: str, tmp_path: Path) -> Iterator[Harness]:
    running = Harness(database_url, tmp_path)
    yield running
    running.close()


def scheduler_view(harness: Harness, name: str) -> tuple[int, str | None, int]:
    """What a cluster write changes for the scheduler: resourceVersion, fingerprint, times queued."""
    with harness.uow() as session:
        row = session.execute(
            select(ClusterRow.resource_version, ClusterRow.scheduling_hash, ClusterRow.dirty_seq).where(
                ClusterRow.name == name
            )
        ).one()
    return int(row[0]), row[1], int(row[2])


def lease_renewed_at(harness: Harness, name: str) -> datetime | None:
    with harness.uow() as session:
        lease = LeaseRepository(session).get("cluster", name)
    return None if lease is None else lease.renew_time


def settled(harness: Harness, sim: RunningSimulator, name: str = "m1") -> tuple[int, str | None, int]:
    """Join ``sim``, let the first process run a few passes (a discovery pass included), and return the
    scheduler's view of the settled cluster."""
    harness.join(sim, name)
    for _ in range(DISCOVERY_PASSES):
        harness.pass_at(10)
    cluster = harness.cluster(name)
    assert ready(cluster) == ("True", "ClusterReady") and taint_keys(cluster) == []
    return scheduler_view(harness, name)


def restarted(harness: Harness, access: MemberAccess | None = None) -> ClusterStatusController:
    """A new controller (and member access) on the same database and clock: what a restarted serve runs."""
    harness.members.close()
    harness.members = access or MemberAccess(harness.uow, harness.box, harness.settings.members)
    harness.controller = ClusterStatusController(
        harness.uow, harness.clock, harness.members, harness.settings.controllers, harness.settings.members
    )
    return harness.controller


def test_a_restart_with_nothing_changed_writes_no_cluster_status(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    before = settled(harness, start_sim(name="m1"))
    restarted(harness)
    for _ in range(DISCOVERY_PASSES):
        assert harness.pass_at(10) == 0
        assert scheduler_view(harness, "m1") == before
        assert lease_renewed_at(harness, "m1") == harness.clock.now()  # the heartbeat goes on


class _ProbeHook:
    """A member client whose first probe runs ``before`` first (delegates everything else)."""

    def __init__(self, client: MemberClient, before: Callable[[], None]) -> None:
        self._client = client
        self._before: Callable[[], None] | None = before

    def probe(self) -> ProbeResult:
        before, self._before = self._before, None
        if before is not None:
            before()
        return self._client.probe()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class StartupRace(MemberAccess):
    """Member access at a start, when another controller (work sync, work status) asks for the member's
    client at the same time as cluster status: both find the pool empty and build one; the other one's
    build finishes only after cluster status got its client and before it probes through it."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.other_building = threading.Event()
        self.other_may_finish = threading.Event()
        self.other: threading.Thread | None = None

    def start_other(self, name: str) -> None:
        self.other = threading.Thread(target=self.clients, args=([name],), name="other-controller")
        self.other.start()
        assert self.other_building.wait(WAIT)

    def _build(self, name: str, kubeconfig: dict[str, Any]) -> MemberClient:
        client = super()._build(name, kubeconfig)
        if threading.current_thread() is self.other:
            self.other_building.set()
            assert self.other_may_finish.wait(WAIT)
            return client
        return _ProbeHook(client, self._finish_other)

    def _finish_other(self) -> None:
        self.other_may_finish.set()
        assert self.other is not None
        self.other.join(WAIT)
        assert not self.other.is_alive()


def test_a_restart_where_controllers_build_the_same_members_client_at_once_writes_nothing(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    before = settled(harness, start_sim(name="m1"))
    race = StartupRace(harness.uow, harness.box, harness.settings.members)
    restarted(harness, race)
    race.start_other("m1")
    assert harness.pass_at(10) == 0
    assert scheduler_view(harness, "m1") == before
    # Cluster status observed the member through a live client: the probe was healthy.
    assert lease_renewed_at(harness, "m1") == harness.clock.now()
    # Whoever asks next gets the one client the pool kept, open.
    assert race.client("m1").probe().ok


def test_a_failed_first_observation_after_a_restart_waits_for_the_failure_threshold(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    before = settled(harness, sim)
    restarted(harness)
    sim.set_faults(down=True)  # a blip right at the restart
    assert harness.pass_at(10) == 0
    sim.set_faults(down=False)
    assert harness.pass_at(10) == 0
    assert scheduler_view(harness, "m1") == before
    assert ready(harness.cluster("m1")) == ("True", "ClusterReady")


def test_a_member_that_stays_down_across_a_restart_still_becomes_not_ready(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    settled(harness, sim)
    restarted(harness)
    sim.set_faults(down=True)
    assert harness.pass_at(10) == 0  # the first failure after the restart starts the threshold
    assert harness.pass_at(29) == 0
    assert ready(harness.cluster("m1")) == ("True", "ClusterReady")
    assert harness.pass_at(1) == 1  # 30 s of failures: the failure threshold
    cluster = harness.cluster("m1")
    assert ready(cluster) == ("False", "ClusterNotReady")
    assert taint_keys(cluster) == ["cluster.karmada.io/not-ready"]
