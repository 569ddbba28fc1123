"""The WorkloadRebalancer controller on a fake clock, both backends: triggers, results that wait for the
scheduler, Karmada's modification rules, the TTL across a restart, and a fail-back after failover.

"A restart" is a new controller object (nothing in memory survives): what must survive is in the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from federation.controllers.rebalancer import WorkloadRebalancerController
from federation.store.bindings import BindingRepository
from federation.store.manifest import format_timestamp
from federation.store.repository import ObjectRepository
from tests.controllers.test_failover import Failover
from tests.controllers.test_scheduler import DYNAMIC, cluster, cluster_status, deployment, policy
from tests.sql_counter import count_statements

API = "apps.karmada.io/v1alpha1"
BOTH = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}, "replicaScheduling": DYNAMIC}


def ref(name: str, kind: str = "Deployment", namespace: str = "default") -> dict[str, str]:
    body = {"apiVersion": "apps/v1", "kind": kind, "name": name}
    return {**body, "namespace": namespace} if namespace else body


class Rebalance(Failover):
    """The failover harness (detector, scheduler, taint manager, graceful eviction) plus the rebalancer."""

    def restart(self) -> None:
        super().restart()
        self.wr = WorkloadRebalancerController(self.uow, self.clock)

    def workloads(self, *names: str, replicas: int = 2, placement: dict[str, Any] = BOTH) -> None:
        for index in (1, 2):
            self.add_cluster(f"member{index}")
        self.create(policy("pp", placement))
        for name in names:
            self.create(deployment(name, replicas))
        self.run()

    def rebalance(self, *workloads: str | dict[str, str], ttl: int | None = None, name: str = "wr") -> None:
        spec: dict[str, Any] = {"workloads": [ref(w) if isinstance(w, str) else w for w in workloads]}
        if ttl is not None:
            spec["ttlSecondsAfterFinished"] = ttl
        self.create(
            {"apiVersion": API, "kind": "WorkloadRebalancer", "metadata": {"name": name}, "spec": spec}
        )

    def edit(self, *workloads: str | dict[str, str], name: str = "wr") -> None:
        current = self.get(name)
        assert current is not None
        current["spec"]["workloads"] = [ref(w) if isinstance(w, str) else w for w in workloads]
        self.replace(current)

    def get(self, name: str = "wr") -> dict[str, Any] | None:
        with self.uow() as session:
            return ObjectRepository(session, "WorkloadRebalancer", API).get(None, name)

    def status(self, name: str = "wr") -> dict[str, Any]:
        found = self.get(name)
        assert found is not None
        return dict(found.get("status") or {})

    def results(self, name: str = "wr") -> dict[str, tuple[str, str]]:
        """Workload name → (result, reason), "" while pending."""
        return {
            e["workload"]["name"]: (e.get("result", ""), e.get("reason", ""))
            for e in self.status(name).get("observedWorkloads") or []
        }

    def trigger(self, binding: str) -> str | None:
        return self.binding(binding)["spec"].get("rescheduleTriggeredAt")

    def untaint(self, name: str) -> None:
        with self.uow() as session:
            repo = ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1", clock=self.clock.now)
            current = repo.get("", name)
            assert current is not None
            current["spec"]["taints"] = []
            repo.replace(current)


@pytest.fixture
def rb(database_url: str) -> Iterator[Rebalance]:
    running = Rebalance(database_url)
    yield running
    running.close()


def now(rb: Rebalance) -> str:
    return format_timestamp(rb.clock.now())


def test_the_trigger_is_the_creation_time_and_success_waits_for_the_scheduler(rb: Rebalance) -> None:
    rb.workloads("web")
    rb.clock.advance(10)
    rb.rebalance("web")
    created = rb.get()["metadata"]["creationTimestamp"]  # type: ignore[index]
    rb.clock.advance(2)
    rb.wr.reconcile()
    assert rb.trigger("web-deployment") == created
    assert rb.results() == {"web": ("", "")}  # written, not yet acted on
    assert "finishTime" not in rb.status()
    rb.wr.reconcile()
    assert rb.results() == {"web": ("", "")}
    rb.run()
    assert rb.decisions("web-deployment")[0].explanation["trigger"] == "RescheduleTriggered"
    rb.wr.reconcile()
    status = rb.status()
    assert rb.results() == {"web": ("Successful", "")}
    assert status["observedGeneration"] == 1 and status["finishTime"] == now(rb)
    assert status["observedWorkloads"][0]["rescheduleTriggeredAt"] == created
    assert "RescheduleTriggered" in rb.events("ResourceBinding", "web-deployment")
    assert rb.events("WorkloadRebalancer", "wr", "") == ["RescheduleTriggered", "RebalanceFinished"]


def test_a_missing_workload_fails_while_the_others_succeed(rb: Rebalance) -> None:
    rb.workloads("a", "b")
    rb.clock.advance(10)
    rb.rebalance("a", "ghost", "b")
    rb.wr.reconcile()
    assert rb.results() == {"a": ("", ""), "b": ("", ""), "ghost": ("Failed", "ReferencedBindingNotFound")}
    assert "finishTime" not in rb.status()
    rb.run()
    rb.wr.reconcile()
    assert rb.results() == {
        "a": ("Successful", ""),
        "b": ("Successful", ""),
        "ghost": ("Failed", "ReferencedBindingNotFound"),
    }
    assert rb.status()["finishTime"] == now(rb)
    events = rb.events("WorkloadRebalancer", "wr", "")
    assert "WorkloadRebalanceFailed" in events and events[-1] == "RebalanceFinished"


def test_a_cluster_scoped_workload_is_rebalanced_through_its_cluster_binding(rb: Rebalance) -> None:
    rbac = {
        "groupVersion": "rbac.authorization.k8s.io/v1",
        "resources": [{"name": "clusterroles", "kind": "ClusterRole"}],
    }
    rb.create(cluster("member1"), {**cluster_status(110), "apiEnablements": [rbac]})
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "reader"},
        "rules": [],
    }
    cpp = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "roles"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}],
            "placement": {"clusterAffinity": {"clusterNames": ["member1"]}},
        },
    }
    rb.create(role)
    rb.create(cpp)
    rb.run()
    with rb.uow() as session:
        assert BindingRepository(session).get("", "reader-clusterrole")["spec"]["clusters"] == [
            {"name": "member1"}
        ]  # type: ignore[index]
    rb.clock.advance(10)
    rb.rebalance({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "reader"})
    rb.wr.reconcile()
    with rb.uow() as session:
        crb = BindingRepository(session).get("", "reader-clusterrole")
    assert crb is not None and crb["spec"]["rescheduleTriggeredAt"] == now(rb)
    rb.run()
    rb.wr.reconcile()
    assert rb.results() == {"reader": ("Successful", "")}


def test_a_failed_fresh_schedule_is_reported_with_the_schedulers_reason(rb: Rebalance) -> None:
    labelled = {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
    rb.add_cluster("member1", labels={"env": "prod"})
    rb.create(policy("pp", labelled))
    rb.create(deployment("web", 2))
    rb.run()
    assert rb.placement("web-deployment") == {"member1": 2}
    rb.clock.advance(10)
    rb.rebalance("web")
    rb.wr.reconcile()
    with rb.uow() as session:  # member1 stops matching before the scheduler gets to the trigger
        repo = ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1", clock=rb.clock.now)
        member1 = repo.get("", "member1")
        assert member1 is not None
        repo.replace({**member1, "metadata": {**member1["metadata"], "labels": {}}})
    rb.run()
    assert rb.condition("web-deployment")["reason"] == "NoClusterFit"
    rb.wr.reconcile()
    assert rb.results() == {"web": ("Failed", "NoClusterFit")}
    assert "finishTime" in rb.status()


def test_an_entry_added_later_is_triggered_at_the_time_it_was_added(rb: Rebalance) -> None:
    rb.workloads("web")
    rb.clock.advance(10)
    rb.rebalance("web")
    created = rb.get()["metadata"]["creationTimestamp"]  # type: ignore[index]
    rb.wr.reconcile()
    rb.run()
    rb.wr.reconcile()
    rb.clock.advance(10)
    rb.create(deployment("api", 2))  # scheduled after the rebalancer was created
    rb.run()
    decisions = len(rb.decisions("api-deployment"))
    rb.clock.advance(10)
    rb.edit("web", "api")
    added = now(rb)
    rb.wr.reconcile()
    assert rb.trigger("api-deployment") == added != created  # Karmada would write `created`: a no-op
    assert rb.trigger("web-deployment") == created
    assert rb.results() == {"api": ("", ""), "web": ("Successful", "")}
    assert "finishTime" not in rb.status()
    rb.run()
    assert len(rb.decisions("api-deployment")) == decisions + 1  # an actual fresh schedule
    rb.wr.reconcile()
    assert rb.results() == {"api": ("Successful", ""), "web": ("Successful", "")}
    assert rb.status()["observedGeneration"] == 2 and rb.status()["finishTime"] == now(rb)


def test_modification_rules(rb: Rebalance) -> None:
    rb.workloads("a", "b", "c")
    rb.clock.advance(10)
    rb.rebalance("a", "ghost")
    rb.wr.reconcile()
    rb.run()
    rb.wr.reconcile()
    assert rb.results() == {"a": ("Successful", ""), "ghost": ("Failed", "ReferencedBindingNotFound")}
    rb.clock.advance(10)
    rb.edit("b")  # a: removed after success, kept; ghost: removed after failing, dropped; b: added
    rb.wr.reconcile()
    assert rb.results() == {"a": ("Successful", ""), "b": ("", "")}
    rb.edit("c")  # b: removed while pending, dropped; c: added
    rb.wr.reconcile()
    assert rb.results() == {"a": ("Successful", ""), "c": ("", "")}
    rb.run()
    rb.wr.reconcile()
    assert rb.results() == {"a": ("Successful", ""), "c": ("Successful", "")}
    rb.clock.advance(10)
    rb.edit(ref("c", namespace="other"))  # modified: c (Successful) stays, c in "other" is added (no binding)
    rb.wr.reconcile()
    observed = [
        (e["workload"].get("namespace"), e["workload"]["name"], e["result"])
        for e in rb.status()["observedWorkloads"]
    ]
    assert observed == [
        ("default", "a", "Successful"),
        ("default", "c", "Successful"),
        ("other", "c", "Failed"),
    ]
    assert rb.status()["observedGeneration"] == 4


def test_ttl_deletes_that_many_seconds_after_finishing_even_across_a_restart(rb: Rebalance) -> None:
    rb.workloads("web")
    rb.clock.advance(10)
    rb.rebalance("web", ttl=60)
    rb.wr.reconcile()
    rb.run()
    rb.wr.reconcile()
    assert rb.status()["finishTime"] == now(rb)
    rb.clock.advance(30)
    rb.restart()  # the deadline is finishTime + ttl, both stored
    rb.wr.reconcile()
    assert rb.get() is not None
    rb.clock.advance(29)
    rb.wr.reconcile()
    assert rb.get() is not None
    rb.clock.advance(1)
    rb.wr.reconcile()
    assert rb.get() is None


def test_ttl_zero_deletes_in_the_pass_that_finishes(rb: Rebalance) -> None:
    rb.workloads("web")
    rb.clock.advance(10)
    rb.rebalance("ghost", ttl=0)
    rb.wr.reconcile()
    assert rb.get() is None


def test_without_ttl_a_finished_rebalancer_is_kept(rb: Rebalance) -> None:
    rb.workloads("web")
    rb.rebalance("ghost")
    rb.wr.reconcile()
    rb.clock.advance(10**7)
    rb.wr.reconcile()
    assert rb.results() == {"ghost": ("Failed", "ReferencedBindingNotFound")}


def test_a_modification_in_progress_holds_the_ttl(rb: Rebalance) -> None:
    rb.workloads("a", "b")
    rb.clock.advance(10)
    rb.rebalance("a", ttl=5)
    rb.wr.reconcile()
    rb.run()
    rb.wr.reconcile()
    rb.clock.advance(3)
    rb.edit("a", "b")
    rb.wr.reconcile()
    rb.clock.advance(10)  # past the old deadline: b is still pending, so nothing is finished
    rb.wr.reconcile()
    assert rb.results() == {"a": ("Successful", ""), "b": ("", "")}
    rb.run()
    rb.wr.reconcile()
    assert rb.get() is not None  # finished now: 5 more seconds
    rb.clock.advance(5)
    rb.wr.reconcile()
    assert rb.get() is None


def test_unchanged_rebalancers_cost_one_statement_and_pending_ones_three(rb: Rebalance) -> None:
    rb.workloads("web")
    rb.clock.advance(10)
    rb.rebalance("web", name="pending")
    rb.wr.reconcile()
    statements = count_statements(rb.engine, rb.wr.reconcile)
    assert len(statements) == 3, statements  # rebalancers; bindings waited on; their latest decisions
    rb.run()
    rb.wr.reconcile()
    statements = count_statements(rb.engine, rb.wr.reconcile)
    assert len(statements) == 1, statements


def test_fail_back_brings_replicas_back_to_the_recovered_cluster(rb: Rebalance) -> None:
    rb.workloads("web", replicas=4)
    assert rb.placement("web-deployment") == {"member1": 2, "member2": 2}
    rb.taint("member1", "maintenance")
    rb.pass_()  # evicted from member1; the dynamic scale-up puts everything on member2
    assert rb.placement("web-deployment") == {"member2": 4}
    rb.report_health(member2="Healthy")
    rb.eviction.reconcile()
    assert rb.tasks() == {}
    rb.clock.advance(60)
    rb.untaint("member1")
    rb.run()
    assert rb.placement("web-deployment") == {"member2": 4}  # steady: nothing moves by itself
    rb.clock.advance(10)
    rb.rebalance("web")
    rb.wr.reconcile()
    rb.run()
    rb.wr.reconcile()
    assert rb.placement("web-deployment") == {"member1": 2, "member2": 2}
    assert rb.results() == {"web": ("Successful", "")}


def test_a_binding_that_cannot_be_written_is_retried_not_reported(
    rb: Rebalance, monkeypatch: pytest.MonkeyPatch
) -> None:
    rb.workloads("web")
    rb.clock.advance(10)
    rb.rebalance("web")
    from federation.controllers import rebalancer

    real = rebalancer._triggered
    broken = [True]

    def fails_in_the_first_pass(*args: Any) -> Any:
        if broken[0]:  # the batch write and the one-by-one retry of the first pass both fail
            raise RuntimeError("the binding could not be written")
        return real(*args)

    monkeypatch.setattr(rebalancer, "_triggered", fails_in_the_first_pass)
    rb.wr.reconcile()
    broken[0] = False
    assert rb.trigger("web-deployment") is None
    assert rb.results() == {"web": ("", "")}  # pending: retried, not Failed
    assert "TriggerRescheduleFailed" in rb.events("ResourceBinding", "web-deployment")
    rb.wr.reconcile()  # nothing else changed: the failed trigger alone brings it back
    assert rb.trigger("web-deployment") == rb.get()["metadata"]["creationTimestamp"]  # type: ignore[index]
