"""Events the controllers record beyond scheduling and eviction (covered with those controllers): a cluster's
Ready flipping, and a Work that fails to apply, each counted when it repeats."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from federation.controllers.cluster_status import ready_event
from federation.members.health import ReadyCondition
from federation.sim import RunningSimulator
from federation.store.db import UnitOfWork
from federation.store.events import EventQuery, EventRepository
from tests.controllers.test_cluster_status import Harness as StatusHarness
from tests.controllers.test_execution_support import Harness, harness, nginx, start_sim

__all__ = ["harness", "start_sim"]  # fixtures, re-exported for pytest


def events_about(uow: UnitOfWork, kind: str, name: str) -> list[tuple[str, str, int, str]]:
    query = EventQuery(None, (("kind", True, kind), ("name", True, name)))
    with uow() as session:
        found, _ = EventRepository(session).list(query)
    return [(e.type, e.reason, e.count, e.message) for e in found]


def test_ready_event_only_when_ready_flips() -> None:
    cluster = {
        "metadata": {"name": "m1", "uid": "u"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady"}]},
    }
    assert ready_event(cluster, ReadyCondition("True", "ClusterReady", "cluster is healthy")) is None
    assert ready_event(cluster, None) is None
    down = ready_event(cluster, ReadyCondition("False", "ClusterNotReachable", "cluster is not reachable"))
    assert down is not None
    assert (down.involved.kind, down.involved.name, down.involved.uid) == ("Cluster", "m1", "u")
    assert (down.type, down.reason, down.message) == (
        "Warning",
        "ClusterNotReachable",
        "Ready is now False: cluster is not reachable",
    )
    first = ready_event({"metadata": {"name": "m1"}}, ReadyCondition("True", "ClusterReady", ""))
    assert first is not None and (first.type, first.message) == ("Normal", "Ready is now True")


def test_ready_changes_are_events_on_the_cluster(
    database_url: str, tmp_path: Path, start_sim: Callable[..., RunningSimulator]
) -> None:
    status = StatusHarness(database_url, tmp_path)
    try:
        sim = start_sim("m1")
        status.join(sim, "m1")
        status.pass_at(0)
        for _ in range(2):  # down, up, down, up: the same two events, each counted twice
            sim.set_faults(down=True)
            status.pass_at(10)
            assert status.pass_at(30) == 1
            sim.set_faults(down=False)
            status.pass_at(10)
            assert status.pass_at(30) == 1
        said = events_about(status.uow, "Cluster", "m1")
    finally:
        status.close()
    assert [(t, r, c) for t, r, c, _ in said] == [
        ("Warning", "ClusterNotReady", 2),
        ("Normal", "ClusterReady", 2),
    ]


def test_a_failed_apply_is_a_sync_failed_event_on_the_work(
    harness: Harness, start_sim: Callable[..., RunningSimulator]
) -> None:
    member = start_sim("member1")
    harness.add_cluster("member1", member)
    template = harness.add_template(nginx(replicas=1))
    harness.add_binding(template, [{"name": "member1", "replicas": 1}])
    member.set_faults(down=True)
    harness.execution.reconcile()
    harness.sync.reconcile()
    work = harness.works()["member1"]["metadata"]
    [(kind, reason, count, message)] = events_about(harness.uow, "Work", work["name"])
    assert (kind, reason, count) == ("Warning", "SyncFailed", 1)
    assert message.startswith("Failed to apply all manifests (0/1): cluster 'member1': ")
    harness.clock.advance(1)
    assert harness.sync.reconcile().processed == 1  # the retry fails the same way: the same event, counted
    assert [c for _, _, c, _ in events_about(harness.uow, "Work", work["name"])] == [2]
