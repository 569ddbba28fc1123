"""The cluster-status controller against real simulators (HTTPS sockets), time moved by a FakeClock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from federation.api.join import JoinRequest, join_cluster, unjoin_cluster
from federation.controllers.cluster_status import ClusterStatusController
from federation.controllers.members_access import MemberAccess
from federation.controllers.runtime import FakeClock
from federation.members.client import KubernetesMemberClient
from federation.settings import Settings, load_settings
from federation.sim import RunningSimulator
from federation.store import migrate
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, make_engine
from federation.store.leases import LeaseRepository
from tests.members.helpers import deployment

NOT_READY = "cluster.karmada.io/not-ready"
UNREACHABLE = "cluster.karmada.io/unreachable"


class Harness:
    """A migrated database, a secret box, member access and the controller on a fake clock."""

    def __init__(self, database_url: str, tmp_path: Path, **members: Any) -> None:
        migrate.upgrade(database_url)
        self.engine = make_engine(database_url)
        self.uow = UnitOfWork.for_engine(self.engine)
        self.settings: Settings = load_settings(
            data_dir=str(tmp_path), database_url=database_url, members=members or None
        )
        self.box = SecretBox(generate_key())
        self.members = MemberAccess(self.uow, self.box, self.settings.members)
        self.clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.controller = ClusterStatusController(
            self.uow, self.clock, self.members, self.settings.controllers, self.settings.members
        )

    def join(self, sim: RunningSimulator | None, name: str, mode: str = "Push") -> dict[str, Any]:
        request = JoinRequest(name, sim.kubeconfig if sim else None, sync_mode=mode)
        return join_cluster(self.uow, self.box, self.settings.members, request, now=self.clock.now())

    def cluster(self, name: str) -> dict[str, Any]:
        with self.uow() as session:
            found = ClusterRepository(session).get(name)
        assert found is not None
        return found

    def pass_at(self, seconds: float = 0) -> int:
        self.clock.advance(seconds)
        return self.controller.reconcile().processed

    def close(self) -> None:
        self.members.close()
        self.engine.dispose()


@pytest.fixture
def harness(database_url: str, tmp_path: Path) -> Iterator[Harness]:
    running = Harness(database_url, tmp_path)
    yield running
    running.close()


def ready(cluster: dict[str, Any]) -> tuple[str, str]:
    condition = next(c for c in cluster["status"]["conditions"] if c["type"] == "Ready")
    return condition["status"], condition["reason"]


def taint_keys(cluster: dict[str, Any]) -> list[str]:
    return [t["key"] for t in cluster["spec"].get("taints") or []]


def test_stable_cluster_costs_no_write(harness: Harness, start_sim: Callable[..., RunningSimulator]) -> None:
    harness.join(start_sim(name="m1"), "m1")
    before = harness.cluster("m1")["metadata"]["resourceVersion"]
    for _ in range(3):
        assert harness.pass_at(10) == 0
    after = harness.cluster("m1")
    assert after["metadata"]["resourceVersion"] == before
    assert ready(after) == ("True", "ClusterReady") and taint_keys(after) == []
    with harness.uow() as session:
        lease = LeaseRepository(session).get("cluster", "m1")
    assert lease is not None and lease.renew_time == harness.clock.now()  # heartbeat on a healthy probe


def test_not_ready_only_after_failure_threshold_then_ready_after_success_threshold(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    harness.join(sim, "m1")
    harness.pass_at(0)  # the first observation seeds the debounce cache
    sim.set_faults(down=True)
    assert harness.pass_at(10) == 0
    assert harness.pass_at(29) == 0  # 29s of failures: still Ready
    assert ready(harness.cluster("m1")) == ("True", "ClusterReady")
    assert harness.pass_at(1) == 1  # 30s: the failure threshold
    cluster = harness.cluster("m1")
    assert ready(cluster) == ("False", "ClusterNotReady")
    assert cluster["spec"]["taints"] == [
        {
            "key": NOT_READY,
            "effect": "NoSchedule",
            "timeAdded": harness.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    ]
    sim.set_faults(down=False)
    assert harness.pass_at(10) == 0
    assert harness.pass_at(29) == 0
    assert ready(harness.cluster("m1"))[0] == "False"
    assert harness.pass_at(1) == 1
    healed = harness.cluster("m1")
    assert ready(healed) == ("True", "ClusterReady") and taint_keys(healed) == []


def test_stopped_member_is_not_reachable(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    harness.join(sim, "m1")
    harness.pass_at(0)
    sim.stop()
    harness.pass_at(10)
    assert harness.pass_at(30) == 1
    cluster = harness.cluster("m1")
    assert ready(cluster) == ("False", "ClusterNotReachable")
    assert taint_keys(cluster) == [NOT_READY]


def test_resource_summary_matches_the_simulators_nodes_and_pods(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1", nodes=2, node_cpu="4", node_memory="8Gi", node_storage="100Gi")
    harness.join(sim, "m1")
    client = KubernetesMemberClient("m1", sim.kubeconfig)
    client.apply(deployment("web", 3, cpu="1500m", memory="1Gi"))  # two fit on node 0, one on node 1
    client.apply(deployment("big", 1, cpu="3", memory="2Gi"))  # fits nowhere: allocating
    client.close()
    assert harness.pass_at(10) == 1
    status = harness.cluster("m1")["status"]
    assert status["nodeSummary"] == {"totalNum": 2, "readyNum": 2}
    assert status["resourceSummary"] == {
        "allocatable": {"cpu": "8", "ephemeral-storage": "200Gi", "memory": "16Gi", "pods": "220"},
        "allocated": {"cpu": "4500m", "memory": "3Gi", "pods": "3"},
        "allocating": {"cpu": "3", "memory": "2Gi", "pods": "1"},
    }
    assert status["kubernetesVersion"] == "v1.32.0"
    assert any(e["groupVersion"] == "apps/v1" for e in status["apiEnablements"])
    assert harness.pass_at(10) == 0


def test_user_taints_survive_automatic_ones(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    sim = start_sim(name="m1")
    harness.join(sim, "m1")
    user_taint = {"key": "maintenance", "effect": "NoSchedule"}
    with harness.uow() as session:
        ClusterRepository(session).set_taints("m1", [user_taint])
    sim.set_faults(down=True)
    harness.pass_at(0)  # first observation publishes at once
    assert taint_keys(harness.cluster("m1")) == ["maintenance", NOT_READY]
    sim.set_faults(down=False)
    harness.pass_at(0)
    harness.pass_at(30)
    assert harness.cluster("m1")["spec"]["taints"] == [user_taint]


def test_pull_cluster_ready_follows_its_lease(harness: Harness) -> None:
    harness.join(None, "edge", mode="Pull")
    harness.pass_at(0)  # no Ready yet (startup grace): Karmada taints it not-ready
    assert "conditions" not in (harness.cluster("edge").get("status") or {})
    assert taint_keys(harness.cluster("edge")) == [NOT_READY]
    with harness.uow() as session:
        LeaseRepository(session).renew_cluster_lease("edge", "edge", harness.clock.now(), 40)
    harness.pass_at(5)
    fresh = harness.cluster("edge")
    assert ready(fresh) == ("True", "ClusterReady") and taint_keys(fresh) == []
    harness.pass_at(34)  # 39s since the renewal: within the 40s grace
    assert ready(harness.cluster("edge"))[0] == "True"
    harness.pass_at(2)
    stale = harness.cluster("edge")
    assert ready(stale) == ("Unknown", "ClusterStatusUnknown")
    assert taint_keys(stale) == [UNREACHABLE]


def test_pull_cluster_that_never_reports(harness: Harness) -> None:
    created = harness.join(None, "edge", mode="Pull")
    born = datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    harness.clock.current = born
    harness.pass_at(59)
    assert "conditions" not in (harness.cluster("edge").get("status") or {})
    harness.pass_at(2)  # startup grace: 60s
    assert ready(harness.cluster("edge")) == ("Unknown", "ClusterStatusNeverUpdated")


def test_bare_cluster_records_are_left_alone(harness: Harness) -> None:
    with harness.uow() as session:
        ClusterRepository(session).objects.create(
            {
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": "bare"},
                "spec": {"syncMode": "Push"},
            }
        )
    assert harness.pass_at(10) == 0
    assert "taints" not in harness.cluster("bare")["spec"]


def test_slow_member_does_not_hold_up_the_others(
    database_url: str, tmp_path: Path, start_sim: Callable[..., RunningSimulator]
) -> None:
    harness = Harness(database_url, tmp_path, request_timeout_seconds=1.0, probe_timeout_seconds=0.5)
    try:
        slow, quick = start_sim(name="slow"), start_sim(name="quick")
        harness.join(slow, "slow")
        harness.join(quick, "quick")
        harness.pass_at(0)
        slow.set_faults(latency_ms=5000)
        quick.set_faults(down=True)
        harness.pass_at(10)
        assert harness.pass_at(30) == 2
        assert ready(harness.cluster("slow")) == ("False", "ClusterNotReachable")
        assert ready(harness.cluster("quick")) == ("False", "ClusterNotReady")
    finally:
        harness.close()


def test_unjoined_cluster_is_forgotten(harness: Harness, start_sim: Callable[..., RunningSimulator]) -> None:
    harness.join(start_sim(name="m1"), "m1")
    harness.pass_at(0)
    assert len(harness.members.pool) == 1
    unjoin_cluster(harness.uow, harness.box, harness.settings.members, "m1")
    harness.pass_at(10)
    assert len(harness.members.pool) == 0
