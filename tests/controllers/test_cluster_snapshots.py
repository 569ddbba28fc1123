"""``SnapshotCache``: an unchanged cluster is the same snapshot object from one load to the next (what
lets the scheduler's memo carry over between batches); a written, new, deleted or malformed cluster is
what a fresh read would give."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from federation.controllers.cluster_snapshots import SnapshotCache, cluster_snapshots
from federation.store.repository import ObjectRepository
from tests.controllers.test_scheduler import Harness, cluster_status
from tests.store.support import count_statements

CLUSTER_API = "cluster.karmada.io/v1alpha1"


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    yield running
    running.close()


def load(harness: Harness, cache: SnapshotCache) -> dict[str, object]:
    with harness.uow() as session:
        snapshots = cache.load(session)
        assert snapshots == cluster_snapshots(session)  # what a fresh read gives, in the same order
    return {s.name: s for s in snapshots}


def test_unchanged_clusters_are_the_same_objects_and_cost_one_query(harness: Harness) -> None:
    for name in ("member2", "member1", "member3"):
        harness.add_cluster(name)
    cache = SnapshotCache()
    first = load(harness, cache)
    assert list(first) == ["member1", "member2", "member3"]
    with count_statements(harness.engine) as log, harness.uow() as session:
        again = {s.name: s for s in cache.load(session)}
    assert all(again[name] is first[name] for name in first)
    assert sum(1 for s in log.statements if "FROM clusters" in s) == 1


def test_a_written_cluster_is_read_again_the_others_are_kept(harness: Harness) -> None:
    for name in ("member1", "member2"):
        harness.add_cluster(name, pods=110)
    cache = SnapshotCache()
    first = load(harness, cache)
    harness.set_cluster_status("member2", cluster_status(500))
    second = load(harness, cache)
    assert second["member1"] is first["member1"]
    assert second["member2"] is not first["member2"]
    assert second["member2"].allocatable is not None and second["member2"].allocatable["pods"] == 500


def test_new_and_deleted_clusters(harness: Harness) -> None:
    for name in ("member1", "member3"):
        harness.add_cluster(name)
    cache = SnapshotCache()
    load(harness, cache)
    harness.add_cluster("member2")
    with harness.uow() as session:
        ObjectRepository(session, "Cluster", CLUSTER_API).delete(None, "member3")
    assert list(load(harness, cache)) == ["member1", "member2"]


def test_a_malformed_cluster_is_left_out_until_it_is_mended(harness: Harness) -> None:
    harness.add_cluster("member1")
    harness.add_cluster("member2")
    cache = SnapshotCache()
    load(harness, cache)
    bad = cluster_status(110)
    bad["resourceSummary"]["allocatable"]["cpu"] = "lots"
    harness.set_cluster_status("member2", bad)
    assert list(load(harness, cache)) == ["member1"]
    harness.set_cluster_status("member2", cluster_status(110))
    assert list(load(harness, cache)) == ["member1", "member2"]


def test_the_scheduler_carries_per_cluster_work_over_to_its_next_batch(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two batches of one pass: the clusters no binding took replicas on are filtered once for the pass."""
    from federation.scheduling import engine
    from tests.controllers.test_scheduler import DYNAMIC, deployment, policy

    runs: list[str] = []
    real = engine.run_filters

    def counting(ctx: object, snapshot: object) -> object:
        runs.append(snapshot.name)  # type: ignore[attr-defined]
        return real(ctx, snapshot)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "run_filters", counting)
    harness = Harness(database_url, batch_size=2)
    try:
        for name in ("member1", "member2", "member3"):
            harness.add_cluster(name)
        placement = {"clusterAffinity": {"clusterNames": ["member1"]}, "replicaScheduling": DYNAMIC}
        harness.create(policy("one", placement))
        for index in range(4):
            harness.create(deployment(f"app{index}", 1))
        harness.detector.reconcile()
        harness.scheduler._requeue_for_cluster_changes()
        assert harness.scheduler.reconcile().processed == 4
    finally:
        harness.close()
    assert runs.count("member2") == runs.count("member3") == 1
