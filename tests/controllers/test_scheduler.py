"""The scheduler controller end to end over the store (both backends): detector → scheduler → stored
binding, decision records, events, retries with back-off and cluster-change requeues, on a FakeClock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from federation.controllers.detector import Detector
from federation.controllers.runtime import FakeClock
from federation.controllers.scheduler import Scheduler
from federation.model.binding import APPLIED_PLACEMENT_ANNOTATION
from federation.store import migrate
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork, make_engine
from federation.store.decisions import DecisionRepository
from federation.store.events import EventRepository
from federation.store.repository import ObjectRepository
from federation.store.tables import ResourceBindingRow

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]
DYNAMIC = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
}


def cluster(name: str, pods: int = 110, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"syncMode": "Push", "apiEndpoint": f"https://{name}:6443", **spec},
    }


def cluster_status(pods: int, cpu: str = "64", ready: str = "True") -> dict[str, Any]:
    return {
        "conditions": [{"type": "Ready", "status": ready, "reason": "ClusterReady", "message": ""}],
        "apiEnablements": APIS,
        "resourceSummary": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": str(pods)}},
    }


def deployment(name: str, replicas: int, cpu: str = "100m") -> dict[str, Any]:
    container = {"name": name, "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def policy(name: str, placement: dict[str, Any], names: list[str] | None = None) -> dict[str, Any]:
    selectors = [
        {"apiVersion": "apps/v1", "kind": "Deployment", **({"name": n} if n else {})} for n in names or [""]
    ]
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resourceSelectors": selectors, "placement": placement},
    }


class Harness:
    """A migrated database, the detector and the scheduler sharing one FakeClock."""

    def __init__(self, database_url: str, **scheduler: Any) -> None:
        migrate.upgrade(database_url)
        self.engine = make_engine(database_url)
        self.uow = UnitOfWork.for_engine(self.engine)
        self.clock = FakeClock(T0)
        self.detector = Detector(self.uow, self.clock, "test")
        self.scheduler = Scheduler(self.uow, self.clock, "test", **scheduler)

    def create(self, obj: dict[str, Any], status: dict[str, Any] | None = None) -> None:
        meta = obj["metadata"]
        with self.uow() as session:
            repo = ObjectRepository(session, obj["kind"], obj["apiVersion"], clock=self.clock.now)
            repo.create(obj)
            if status is not None:
                repo.update_status(meta.get("namespace"), meta["name"], status)

    def replace(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        with self.uow() as session:
            repo = ObjectRepository(session, obj["kind"], obj["apiVersion"], clock=self.clock.now)
            current = repo.get(meta.get("namespace"), meta["name"])
            assert current is not None
            repo.replace(
                {**obj, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
            )

    def set_cluster_status(self, name: str, status: dict[str, Any]) -> None:
        with self.uow() as session:
            ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").update_status(
                "", name, status
            )

    def add_cluster(self, name: str, pods: int = 110, **kwargs: Any) -> None:
        self.create(cluster(name, **kwargs), cluster_status(pods))

    def run(self) -> int:
        self.detector.reconcile()
        return self.scheduler.reconcile().processed

    def binding(self, name: str) -> dict[str, Any]:
        with self.uow() as session:
            found = BindingRepository(session).get("default", name)
        assert found is not None
        return found

    def placement(self, name: str) -> dict[str, int]:
        return {c["name"]: c.get("replicas", 0) for c in self.binding(name)["spec"].get("clusters") or []}

    def condition(self, name: str) -> dict[str, Any]:
        conditions = self.binding(name).get("status", {}).get("conditions") or []
        return next(c for c in conditions if c["type"] == "Scheduled")

    def decisions(self, name: str) -> list[Any]:
        uid = self.binding(name)["metadata"]["uid"]
        with self.uow() as session:
            return DecisionRepository(session).history(binding_uid=uid)

    def claim_state(self, name: str) -> tuple[bool, datetime | None]:
        with self.uow() as session:
            row = session.query(ResourceBindingRow).filter_by(namespace="default", name=name).one()
            return row.needs_scheduling, row.next_attempt_at

    def close(self) -> None:
        self.engine.dispose()


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    yield running
    running.close()


def test_schedules_a_deployment_end_to_end(harness: Harness) -> None:
    harness.add_cluster("member1")
    harness.add_cluster("member2")
    static = {
        "clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                    {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2},
                ]
            },
        },
    }
    harness.create(deployment("web", 3))
    harness.create(policy("web", static, ["web"]))
    assert harness.run() == 1
    rb = harness.binding("web-deployment")
    assert rb["spec"]["clusters"] == [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 2}]
    assert harness.condition("web-deployment") == {
        "type": "Scheduled",
        "status": "True",
        "reason": "Success",
        "message": "Binding has been scheduled successfully.",
        "lastTransitionTime": "2026-03-01T12:00:00Z",
    }
    status = rb["status"]
    assert status["schedulerObservedGeneration"] == rb["metadata"]["generation"]
    assert status["lastScheduledTime"] == "2026-03-01T12:00:00Z"
    assert APPLIED_PLACEMENT_ANNOTATION in rb["metadata"]["annotations"]
    [decision] = harness.decisions("web-deployment")
    assert decision.result == "Success" and decision.clusters == rb["spec"]["clusters"]
    # The per-cluster explanation is in the decision record only; the status keeps the summary.
    assert decision.explanation["clusters"]["member2"]["replicas"] == 2
    summary = status["schedulingExplanation"]
    assert "clusters" not in summary
    assert summary == {k: v for k, v in decision.explanation.items() if k != "clusters"}
    assert decision.explanation["strategy"] == "StaticWeight"
    with harness.uow() as session:
        events = EventRepository(session).for_object("ResourceBinding", "default", "web-deployment")
    assert [(e.type, e.reason) for e in events] == [("Normal", "ScheduleBindingSucceed")]
    assert harness.claim_state("web-deployment") == (False, None)
    assert harness.run() == 0  # nothing queued: nothing written


def test_replicas_change_reschedules(harness: Harness) -> None:
    harness.add_cluster("member1")
    harness.add_cluster("member2")
    harness.create(deployment("web", 2))
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}, ["web"]))
    harness.run()
    assert sum(harness.placement("web-deployment").values()) == 2
    harness.clock.advance(60)
    harness.replace(deployment("web", 6))
    assert harness.run() == 1
    assert sum(harness.placement("web-deployment").values()) == 6
    rb = harness.binding("web-deployment")
    # detector create (1), scheduler write (2), detector replicas change (3), scheduler write (4)
    assert rb["status"]["schedulerObservedGeneration"] == rb["metadata"]["generation"] == 4
    assert rb["status"]["lastScheduledTime"] == "2026-03-01T12:01:00Z"
    assert rb["status"]["schedulingExplanation"]["trigger"] == "ReplicasChanged"
    assert [d.result for d in harness.decisions("web-deployment")] == ["Success", "Success"]


def test_unschedulable_keeps_previous_placement_and_backs_off(harness: Harness) -> None:
    harness.add_cluster("member1", pods=4)
    harness.create(deployment("web", 3))
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}, ["web"]))
    harness.run()
    assert harness.placement("web-deployment") == {"member1": 3}
    harness.replace(deployment("web", 8))  # 4 pods of room: cannot fit
    harness.run()
    assert harness.placement("web-deployment") == {"member1": 3}  # Karmada keeps the old placement
    condition = harness.condition("web-deployment")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert "not enough" in condition["message"]
    rb = harness.binding("web-deployment")
    assert rb["status"]["schedulerObservedGeneration"] == 2  # postponed until a success (gen 3)
    assert harness.claim_state("web-deployment") == (True, T0.replace(second=1))
    assert harness.run() == 0  # not before its retry time
    delays = []
    for _ in range(3):
        retry_at = harness.claim_state("web-deployment")[1]
        assert retry_at is not None
        harness.clock.current = retry_at
        before = harness.clock.now()
        assert harness.run() == 1
        after = harness.claim_state("web-deployment")[1]
        assert after is not None
        delays.append((after - before).total_seconds())
    assert delays == [2.0, 4.0, 8.0]
    assert [d.result for d in harness.decisions("web-deployment")][:2] == ["Unschedulable", "Unschedulable"]
    harness.set_cluster_status("member1", cluster_status(pods=20))
    harness.clock.current = harness.claim_state("web-deployment")[1] or harness.clock.now()
    harness.run()
    assert sum(harness.placement("web-deployment").values()) == 8
    assert harness.claim_state("web-deployment") == (False, None)


def test_backoff_is_capped() -> None:
    scheduler = Scheduler(None, FakeClock(), "x", backoff_initial_seconds=1, backoff_max_seconds=300)  # type: ignore[arg-type]
    assert [scheduler.backoff(n) for n in (1, 2, 3, 9, 10, 100)] == [1, 2, 4, 256, 300, 300]


def test_one_cycle_does_not_overcommit(harness: Harness) -> None:
    harness.add_cluster("member1", pods=5)
    harness.add_cluster("member2", pods=5)
    harness.create(policy("all", {"replicaScheduling": DYNAMIC}))
    for name in ("a", "b", "c"):
        harness.create(deployment(name, 4))
    harness.run()
    placed = [harness.placement(f"{n}-deployment") for n in ("a", "b", "c")]
    assert [sum(p.values()) for p in placed[:2]] == [4, 4]
    per_cluster = {c: sum(p.get(c, 0) for p in placed) for c in ("member1", "member2")}
    assert all(count <= 5 for count in per_cluster.values()), per_cluster
    assert harness.condition("c-deployment")["reason"] == "Unschedulable"


def test_no_cluster_fit_clears_and_a_cluster_change_requeues(harness: Harness) -> None:
    taint = [{"key": "maintenance", "effect": "NoSchedule"}]
    harness.add_cluster("member1", labels={"env": "prod"}, taints=taint)
    harness.add_cluster("member2", labels={"env": "dev"})
    harness.create(deployment("web", 2))
    harness.create(
        policy("web", {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}, ["web"])
    )
    harness.run()
    condition = harness.condition("web-deployment")
    assert (condition["status"], condition["reason"]) == ("False", "NoClusterFit")
    assert condition["message"] == (
        "0/2 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint, "
        "1 cluster(s) had untolerated taint {maintenance: }."
    )
    assert harness.binding("web-deployment")["spec"]["clusters"] == []
    assert harness.claim_state("web-deployment") == (False, None)  # waits for an event, no retry
    harness.replace(cluster("member2", labels={"env": "prod"}))  # a relabel is a relevant change
    assert harness.run() == 1
    assert harness.placement("web-deployment") == {"member2": 2}  # Duplicated: every cluster gets 2


def test_cluster_changes_requeue_only_affected_bindings(harness: Harness) -> None:
    harness.add_cluster("member1", labels={"env": "prod"})
    prod = {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
    harness.create(deployment("dup", 1))
    harness.create(policy("dup", prod, ["dup"]))
    harness.create(deployment("divided", 2))
    harness.create(policy("divided", {**prod, "replicaScheduling": DYNAMIC}, ["divided"]))
    harness.run()
    assert harness.placement("dup-deployment") == {"member1": 1}
    harness.add_cluster("staging", labels={"env": "staging"})
    harness.scheduler._requeue_for_cluster_changes()
    assert harness.claim_state("dup-deployment")[0] is False  # the new cluster does not match
    harness.add_cluster("member2", labels={"env": "prod"})
    harness.scheduler._requeue_for_cluster_changes()
    assert harness.claim_state("dup-deployment")[0] is True  # Duplicated + matching: re-queued
    assert harness.claim_state("divided-deployment")[0] is False  # scheduled Divided: no trigger anyway
    harness.run()
    assert harness.placement("dup-deployment") == {"member1": 1, "member2": 1}
    harness.set_cluster_status("member1", {**cluster_status(110), "resourceSummary": {}})
    harness.scheduler._requeue_for_cluster_changes()
    assert harness.claim_state("divided-deployment")[0] is False  # capacity alone is not an event


def test_suspended_scheduling_is_skipped(harness: Harness) -> None:
    harness.add_cluster("member1")
    harness.create(deployment("web", 2))
    suspended = policy("web", {"replicaScheduling": DYNAMIC}, ["web"])
    suspended["spec"]["suspension"] = {"scheduling": True}
    harness.create(suspended)
    harness.run()
    rb = harness.binding("web-deployment")
    assert "clusters" not in rb["spec"] and not (rb.get("status") or {}).get("conditions")
    assert harness.claim_state("web-deployment") == (False, None)
    harness.replace(policy("web", {"replicaScheduling": DYNAMIC}, ["web"]))
    harness.run()
    assert harness.placement("web-deployment") == {"member1": 2}


def test_without_trigger_only_the_observed_generation_moves(harness: Harness) -> None:
    harness.add_cluster("member1")
    harness.create(deployment("web", 2))
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}, ["web"]))
    harness.run()
    with harness.uow() as session:
        BindingRepository(session).mark_for_scheduling("default", "web-deployment")
    harness.clock.advance(30)
    harness.run()
    assert harness.binding("web-deployment")["status"]["lastScheduledTime"] == "2026-03-01T12:00:00Z"
    assert len(harness.decisions("web-deployment")) == 1


def test_plan_predicts_exactly_what_the_scheduler_writes(harness: Harness) -> None:
    from federation.scheduling.offline import plan_manifests
    from federation.scheduling.planner import stored_status

    harness.add_cluster("member1", pods=3)
    harness.add_cluster("member2", pods=8)
    harness.create(deployment("web", 7))
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}, ["web"]))
    with harness.uow() as session:
        template = ObjectRepository(session, "Deployment", "apps/v1").get("default", "web")
        pp = ObjectRepository(session, "PropagationPolicy", "policy.karmada.io/v1alpha1").get(
            "default", "web"
        )
        clusters, _ = ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").list()
    assert template is not None and pp is not None
    [planned] = plan_manifests([template, pp], clusters, now=harness.clock.now())
    harness.run()
    stored = harness.binding("web-deployment")
    assert planned["spec"] == stored["spec"]
    # plan prints the whole explanation; the stored status keeps its summary, the decision the whole.
    assert stored_status(planned["status"]) == stored["status"]
    [decision] = harness.decisions("web-deployment")
    assert decision.explanation == planned["status"]["schedulingExplanation"]
    for field in ("labels", "annotations", "generation", "ownerReferences"):
        assert planned["metadata"][field] == stored["metadata"][field], field
