"""Cluster failover on a fake clock, both backends: taints → evictions → re-placement → graceful removal.

Every threshold, toleration and timeout is driven by ``FakeClock.advance``; "a restart" is a new controller
object (nothing in memory survives), so what must survive lives in the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from federation.controllers.graceful_eviction import GracefulEvictionController
from federation.controllers.taint_manager import TaintManager
from federation.settings import FailoverSettings
from federation.store.events import EventRepository
from federation.store.history import HistoryRepository
from federation.store.manifest import format_timestamp
from federation.store.repository import ObjectRepository
from tests.controllers.test_scheduler import Harness, cluster_status, deployment, policy

NOT_READY = "cluster.karmada.io/not-ready"
STATIC_1_2 = {
    "clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2},
            ]
        },
    },
}


class Failover(Harness):
    """The scheduler harness plus the taint manager and graceful eviction, on the same clock."""

    def __init__(self, database_url: str, **settings: Any) -> None:
        super().__init__(database_url)
        self.settings = FailoverSettings(**settings)
        self.detector.default_toleration_seconds = (
            self.settings.default_not_ready_toleration_seconds,
            self.settings.default_unreachable_toleration_seconds,
        )
        self.restart()

    def restart(self) -> None:
        """New controller objects: whatever they kept in memory is gone."""
        self.taints = TaintManager(self.uow, self.clock, self.settings)
        self.eviction = GracefulEvictionController(self.uow, self.clock, timeout_seconds=600)

    def setup(self, placement: dict[str, Any] = STATIC_1_2, replicas: int = 3, clusters: int = 3) -> None:
        for index in range(1, clusters + 1):
            self.add_cluster(f"member{index}")
        self.create(policy("pp", placement, names=["web"]))
        self.create(deployment("web", replicas))
        self.run()

    def set_policy_failover(self, behavior: dict[str, Any]) -> None:
        body = policy("pp", STATIC_1_2, names=["web"])
        body["spec"]["failover"] = behavior
        self.replace(body)
        self.run()

    def pass_(self) -> None:
        """One pass of everything that moves a workload."""
        self.taints.reconcile()
        self.run()
        self.eviction.reconcile()

    def taint(
        self, name: str, key: str, effect: str = "NoExecute", ago: float = 0, ready: str | None = None
    ) -> None:
        with self.uow() as session:
            repo = ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1", clock=self.clock.now)
            current = repo.get("", name)
            assert current is not None
            added = format_timestamp(self.clock.now() if not ago else _ago(self.clock.now(), ago))
            current["spec"]["taints"] = [
                *current["spec"].get("taints", []),
                {"key": key, "effect": effect, "timeAdded": added},
            ]
            repo.replace(current)
            if ready is not None:
                repo.update_status("", name, cluster_status(110, ready=ready))

    def report_health(self, **health: str) -> None:
        """Write the binding's aggregatedStatus as binding status would (the member's health per cluster)."""
        rb = self.binding("web-deployment")
        items = [{"clusterName": c, "applied": True, "health": h} for c, h in health.items()]
        with self.uow() as session:
            ObjectRepository(session, "ResourceBinding", "work.karmada.io/v1alpha2").update_status(
                "default", "web-deployment", {**rb.get("status", {}), "aggregatedStatus": items}
            )

    def tasks(self) -> dict[str, dict[str, Any]]:
        return {
            t["fromCluster"]: t
            for t in self.binding("web-deployment")["spec"].get("gracefulEvictionTasks") or []
        }

    def tasks_of(self, name: str) -> list[str]:
        return [t["fromCluster"] for t in self.binding(name)["spec"].get("gracefulEvictionTasks") or []]

    def history(self) -> list[tuple[str, str, str]]:
        with self.uow() as session:
            return [(e.action, e.cluster, e.reason) for e in reversed(HistoryRepository(session).list())]

    def events(
        self, kind: str = "ResourceBinding", name: str = "web-deployment", ns: str = "default"
    ) -> list[str]:
        with self.uow() as session:
            return [e.reason for e in EventRepository(session).for_object(kind, ns, name)]


def _ago(now: datetime, seconds: float) -> datetime:
    from datetime import timedelta

    return now - timedelta(seconds=seconds)


@pytest.fixture
def fo(database_url: str) -> Iterator[Failover]:
    running = Failover(database_url)
    yield running
    running.close()


def test_untolerated_taint_evicts_at_once_and_the_scheduler_replaces(fo: Failover) -> None:
    fo.setup()
    assert fo.placement("web-deployment") == {"member1": 1, "member2": 2}
    fo.taint("member1", "maintenance")
    fo.taints.reconcile()
    assert fo.placement("web-deployment") == {"member2": 2}
    task = fo.tasks()["member1"]
    assert (task["reason"], task["producer"], task["purgeMode"], task["replicas"]) == (
        "TaintUntolerated",
        "TaintManager",
        "Gracefully",
        1,
    )
    fo.run()  # the eviction queued the binding: static weights recompute over what is left
    assert fo.placement("web-deployment") == {"member2": 3}
    assert ("Evicted", "member1", "TaintUntolerated") in fo.history()
    assert "EvictWorkloadFromClusterSucceed" in fo.events()


def test_default_toleration_waits_300_seconds_and_survives_a_restart(fo: Failover) -> None:
    fo.setup()
    fo.taint("member1", NOT_READY, ready="False")
    fo.pass_()
    assert "member1" in fo.placement("web-deployment")
    fo.clock.advance(299)
    fo.pass_()
    assert "member1" in fo.placement("web-deployment")
    fo.restart()  # the deadline is timeAdded + tolerationSeconds, both in the database
    fo.clock.advance(1)
    fo.pass_()
    assert fo.placement("web-deployment") == {"member2": 3}


def test_a_toleration_without_seconds_tolerates_for_good(fo: Failover) -> None:
    placement = {
        **STATIC_1_2,
        "clusterTolerations": [{"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"}],
    }
    fo.setup(placement)
    fo.taint("member1", NOT_READY, ready="False")
    fo.clock.advance(100_000)
    fo.pass_()
    assert "member1" in fo.placement("web-deployment")


def test_disabled_failover_evicts_nothing(database_url: str) -> None:
    fo = Failover(database_url, enabled=False)
    try:
        fo.setup()
        fo.taint("member1", "maintenance")
        fo.pass_()
        assert fo.placement("web-deployment") == {"member1": 1, "member2": 2}
    finally:
        fo.close()


def test_most_clusters_down_pauses_evictions(fo: Failover) -> None:
    fo.setup()
    for name in ("member1", "member2"):
        fo.taint(name, "maintenance", ready="False")
    fo.pass_()  # 2 of 3 unhealthy (> 55%): paused, and said once
    assert fo.placement("web-deployment") == {"member1": 1, "member2": 2}
    assert fo.events("Federation", "federation", "") == ["EvictionPaused"]
    fo.clock.advance(10)
    fo.pass_()
    assert fo.events("Federation", "federation", "") == ["EvictionPaused"]
    with fo.uow() as session:
        ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").update_status(
            "", "member2", cluster_status(110)
        )
    fo.pass_()  # 1 of 3: normal pace again; both tainted clusters are left
    assert fo.placement("web-deployment") == {"member3": 3}
    assert fo.events("Federation", "federation", "") == ["EvictionPaused", "EvictionResumed"]


def test_eviction_rate_limits_across_bindings(database_url: str) -> None:
    fo = Failover(database_url, eviction_rate_per_second=1)
    try:
        for index in (1, 2):
            fo.add_cluster(f"member{index}")
        fo.create(policy("pp", {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}))
        for name in ("a", "b", "c"):
            fo.create(deployment(name, 1))
        fo.run()
        fo.taint("member1", "maintenance")
        on_member1 = lambda: sum("member1" in fo.placement(f"{n}-deployment") for n in "abc")  # noqa: E731
        fo.taints.reconcile()
        assert on_member1() == 2  # one token
        fo.taints.reconcile()
        assert on_member1() == 2  # no new token without time passing
        fo.clock.advance(1)
        fo.taints.reconcile()
        assert on_member1() == 1
    finally:
        fo.close()


def test_graceful_eviction_keeps_the_old_copy_until_the_new_placement_is_healthy(fo: Failover) -> None:
    fo.setup()
    fo.taint("member1", "maintenance")
    fo.pass_()
    assert set(fo.tasks()) == {"member1"}
    fo.report_health(member2="Unhealthy")
    fo.eviction.reconcile()
    assert set(fo.tasks()) == {"member1"}
    fo.report_health(member2="Healthy")
    fo.eviction.reconcile()
    assert fo.tasks() == {}
    assert ("TaskRemoved", "member1", "Healthy") in fo.history()


def test_task_times_out_after_the_global_timeout_even_across_a_restart(fo: Failover) -> None:
    fo.setup({"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]}})  # Duplicated
    fo.taint("member1", "maintenance")
    fo.pass_()
    assert set(fo.placement("web-deployment")) == {"member2", "member3"}
    fo.report_health(member2="Healthy", member3="Unhealthy")  # not all healthy, but not the last copy
    fo.clock.advance(599)
    fo.eviction.reconcile()
    assert set(fo.tasks()) == {"member1"}
    fo.restart()
    fo.clock.advance(1)
    fo.eviction.reconcile()
    assert fo.tasks() == {}
    assert ("TaskRemoved", "member1", "Timeout") in fo.history()


def test_last_copy_guard_holds_the_task_and_says_why(fo: Failover) -> None:
    only_member1 = {"clusterAffinity": {"clusterNames": ["member1"]}}
    fo.setup(only_member1, replicas=2)
    fo.taint("member1", "maintenance")
    fo.pass_()  # nowhere else to go: nothing is placed
    assert fo.placement("web-deployment") == {}
    fo.clock.advance(10_000)  # long past the timeout
    fo.eviction.reconcile()
    assert set(fo.tasks()) == {"member1"}
    held = next(
        c for c in fo.binding("web-deployment")["status"]["conditions"] if c["type"] == "GracefulEvictionHeld"
    )
    assert (held["status"], held["reason"]) == ("True", "NoHealthyReplacement")


@pytest.mark.parametrize(
    ("mode", "expected"), [("Directly", "Directly"), ("Gracefully", "Gracefully"), (None, "Gracefully")]
)
def test_cluster_purge_mode_from_the_policy_reaches_the_task(
    fo: Failover, mode: str | None, expected: str
) -> None:
    fo.setup()
    if mode is not None:
        fo.set_policy_failover({"cluster": {"purgeMode": mode}})
    fo.taint("member1", "maintenance")
    fo.pass_()
    assert fo.tasks()["member1"]["purgeMode"] == expected


def test_suppressed_task_stays_until_a_user_confirms(fo: Failover) -> None:
    fo.setup()
    fo.taint("member1", "maintenance")
    fo.pass_()
    rb = fo.binding("web-deployment")
    rb["spec"]["gracefulEvictionTasks"][0]["suppressDeletion"] = True
    fo.replace(rb)
    fo.report_health(member2="Healthy")
    fo.clock.advance(10_000)
    fo.pass_()
    assert set(fo.tasks()) == {"member1"}
    rb = fo.binding("web-deployment")
    rb["spec"]["gracefulEvictionTasks"][0]["suppressDeletion"] = False
    fo.replace(rb)
    fo.eviction.reconcile()
    assert fo.tasks() == {}
    assert ("TaskRemoved", "member1", "Confirmed") in fo.history()


def test_a_binding_that_cannot_be_evicted_leaves_the_batch_to_the_others(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evictions of a pass go out in one flush; one binding that fails it is retried alone (its own
    savepoint), says why, and the others are evicted all the same."""
    from federation.controllers import taint_manager

    fo = Failover(database_url)
    try:
        for index in (1, 2):
            fo.add_cluster(f"member{index}")
        fo.create(policy("pp", {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}))
        for name in ("a", "bad", "c"):
            fo.create(deployment(name, 1))
        fo.run()
        real = taint_manager.failover.evict_cluster

        def evict_cluster(spec: dict[str, Any], *args: Any) -> Any:
            if spec["resource"]["name"] == "bad":
                raise RuntimeError("this binding cannot be evicted")
            return real(spec, *args)

        monkeypatch.setattr(taint_manager.failover, "evict_cluster", evict_cluster)
        fo.taint("member1", "maintenance")
        fo.taints.reconcile()
        assert "member1" in fo.placement("bad-deployment")
        assert not any("member1" in fo.placement(f"{n}-deployment") for n in ("a", "c"))
        evicted = {n: [c for c in fo.tasks_of(f"{n}-deployment")] for n in ("a", "bad", "c")}
        assert evicted == {"a": ["member1"], "bad": [], "c": ["member1"]}
        assert "EvictFailed" in fo.events(name="bad-deployment")
        assert "EvictWorkloadFromClusterSucceed" in fo.events(name="a-deployment")
        monkeypatch.setattr(taint_manager.failover, "evict_cluster", real)
        fo.taints.reconcile()  # the bad one's cause is gone: evicted on the next pass
        assert fo.tasks_of("bad-deployment") == ["member1"]
    finally:
        fo.close()
