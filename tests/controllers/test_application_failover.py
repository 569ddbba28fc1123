"""Application failover and its retry budget on a fake clock, both backends: a workload that stays Unhealthy
on a cluster is evicted from it, within the budget kept on its template; the scheduler avoids the clusters
it failed on. "A restart" is a new controller object: what must survive lives in the database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from federation.controllers import isolation
from federation.controllers.application_failover import ApplicationFailover, _with_retries
from federation.model.budget import (
    MAX_RESCHEDULES_ANNOTATION,
    RESCHEDULE_COUNT_ANNOTATION,
    TRIED_CLUSTERS_ANNOTATION,
    observe,
)
from federation.store.decisions import DecisionRepository
from federation.store.errors import Conflict
from federation.store.events import EventRepository
from federation.store.health import HealthRepository, Observation
from federation.store.manifest import format_timestamp
from federation.store.repository import ObjectRepository
from federation.store.tables import ResourceBindingRow, WorkloadHealthRow
from tests.controllers.test_failover import STATIC_1_2, Failover
from tests.controllers.test_scheduler import cluster, cluster_status, deployment

APIS = [
    {
        "groupVersion": "apps/v1",
        "resources": [
            {"name": "deployments", "kind": "Deployment"},
            {"name": "statefulsets", "kind": "StatefulSet"},
            {"name": "daemonsets", "kind": "DaemonSet"},
        ],
    },
    {"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}]},
]
DUPLICATED_1_3 = {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]}}
APPLICATION = {"decisionConditions": {"tolerationSeconds": 300}}
CONTAINER = {"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}


def workload(kind: str = "Deployment", replicas: int = 3, **annotations: str) -> dict[str, Any]:
    if kind == "Deployment":
        body = deployment("web", replicas)
    elif kind == "Pod":
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [CONTAINER]},
        }
    else:
        pod = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [CONTAINER]}}
        spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": pod}
        if kind == "StatefulSet":
            spec["replicas"] = replicas
        body = {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": "web", "namespace": "default"},
            "spec": spec,
        }
    body["metadata"]["annotations"] = annotations
    return body


def app_policy(
    placement: dict[str, Any], kind: str = "Deployment", application: dict[str, Any] | None = None
) -> dict[str, Any]:
    api_version = "v1" if kind == "Pod" else "apps/v1"
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "pp", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": api_version, "kind": kind, "name": "web"}],
            "placement": placement,
            "propagateDeps": True,
            "failover": {"application": application or APPLICATION},
        },
    }


class App(Failover):
    """The failover harness plus the application-failover controller; workloads of any kind."""

    kind = "Deployment"

    def restart(self) -> None:
        super().restart()
        self.app = ApplicationFailover(self.uow, self.clock, self.settings)

    def add_cluster(self, name: str, pods: int = 110, **kwargs: Any) -> None:
        self.create(cluster(name, **kwargs), {**cluster_status(pods), "apiEnablements": APIS})

    def start(
        self,
        placement: dict[str, Any] = STATIC_1_2,
        kind: str = "Deployment",
        application: dict[str, Any] | None = None,
        clusters: int = 3,
        **annotations: str,
    ) -> None:
        self.kind = kind
        for index in range(1, clusters + 1):
            self.add_cluster(f"member{index}")
        self.create(app_policy(placement, kind, application))
        self.create(workload(kind, **annotations))
        self.run()

    @property
    def rb(self) -> str:
        return f"web-{self.kind.lower()}"

    def where(self) -> dict[str, int]:
        return self.placement(self.rb)

    def health(self, **health: str) -> None:
        """The binding's aggregatedStatus as binding status writes it (one item per cluster)."""
        items = [{"clusterName": c, "applied": True, "health": h} for c, h in health.items()]
        with self.uow() as session:
            repo = ObjectRepository(session, "ResourceBinding", "work.karmada.io/v1alpha2")
            current = repo.get("default", self.rb)
            assert current is not None
            repo.update_status("default", self.rb, {**current.get("status", {}), "aggregatedStatus": items})

    def after(self, seconds: float) -> None:
        """Time passes, then the controller looks."""
        self.clock.advance(seconds)
        self.app.reconcile()

    def template(self) -> dict[str, Any]:
        api_version = "v1" if self.kind == "Pod" else "apps/v1"
        with self.uow() as session:
            found = ObjectRepository(session, self.kind, api_version).get("default", "web")
        assert found is not None
        return found

    def budget(self) -> tuple[str | None, Any]:
        annotations = self.template()["metadata"].get("annotations") or {}
        tried = annotations.get(TRIED_CLUSTERS_ANNOTATION)
        return annotations.get(RESCHEDULE_COUNT_ANNOTATION), None if tried is None else json.loads(tried)

    def annotate(self, **values: str | None) -> None:
        template = self.template()
        annotations = dict(template["metadata"].get("annotations") or {})
        for key, value in values.items():
            name = {"limit": MAX_RESCHEDULES_ANNOTATION, "count": RESCHEDULE_COUNT_ANNOTATION}.get(
                key, TRIED_CLUSTERS_ANNOTATION
            )
            if value is None:
                annotations.pop(name, None)
            else:
                annotations[name] = value
        template["metadata"]["annotations"] = annotations
        self.replace(template)

    def exhausted(self) -> dict[str, Any] | None:
        conditions = self.binding(self.rb).get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "FailoverExhausted"), None)

    def binding_id(self) -> int:
        with self.uow() as session:
            row = session.scalars(select(ResourceBindingRow).where(ResourceBindingRow.name == self.rb)).one()
            return row.id

    def rows(self) -> dict[str, str]:
        with self.uow() as session:
            return {r.cluster_name: r.health for r in session.scalars(select(WorkloadHealthRow))}

    def app_tasks(self) -> dict[str, dict[str, Any]]:
        return {t["fromCluster"]: t for t in self.binding(self.rb)["spec"].get("gracefulEvictionTasks") or []}

    def template_events(self) -> list[str]:
        with self.uow() as session:
            return [e.reason for e in EventRepository(session).for_object(self.kind, "default", "web")]


@pytest.fixture
def app(database_url: str) -> Iterator[App]:
    running = App(database_url)
    yield running
    running.close()


# -- the toleration ---------------------------------------------------------------------------------------


def test_unhealthy_beyond_the_toleration_is_evicted_and_the_budget_written(app: App) -> None:
    app.start()
    assert app.where() == {"member1": 1, "member2": 2}
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    app.after(299)
    assert app.where() == {"member1": 1, "member2": 2}
    assert app.budget() == (None, None)
    app.after(1)
    assert app.where() == {"member2": 2}
    task = app.app_tasks()["member1"]
    assert (
        task["reason"],
        task["producer"],
        task["purgeMode"],
        task["gracePeriodSeconds"],
        task["replicas"],
    ) == (
        "ApplicationFailure",
        "resource-binding-application-failover-controller",
        "Gracefully",
        600,
        1,
    )
    assert app.budget() == ("1", ["member1"])  # the first reschedule: count 1, the list [member1]
    history = app.history()
    assert ("Evicted", "member1", "ApplicationFailure") in history
    assert ("BudgetChanged", "member1", "Rescheduled") in history
    assert "EvictWorkloadFromClusterSucceed" in app.events(name=app.rb)
    assert "FailoverBudgetChanged" in app.template_events()
    assert set(app.rows()) == {"member2"}  # the evicted cluster's row goes with it
    app.run()  # the eviction queued the binding: static weights recompute over what is left
    assert app.where() == {"member2": 3}


def test_template_annotations_alone_change_no_placement(app: App) -> None:
    app.start()
    app.annotate(count="4", tried='["member3"]')
    app.run()
    assert app.where() == {"member1": 1, "member2": 2}
    assert app.binding(app.rb)["metadata"]["generation"] == 2  # the first schedule only


def test_flapping_between_unhealthy_and_unknown_accumulates(app: App) -> None:
    app.start()
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    app.clock.advance(200)
    app.health(member1="Unknown", member2="Healthy")
    app.after(0)
    app.after(5000)  # Unknown pauses the clock, it does not reset it
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    app.after(99)
    assert "member1" in app.where()
    app.after(1)
    assert "member1" not in app.where()


def test_healthy_resets_the_clock(app: App) -> None:
    app.start()
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    app.clock.advance(250)
    app.health(member1="Healthy", member2="Healthy")
    app.after(0)
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(10)  # seen Unhealthy again 10 s after Healthy: the clock starts from zero here
    app.after(299)
    assert "member1" in app.where()
    app.after(1)
    assert "member1" not in app.where()


def test_a_restart_in_the_middle_keeps_the_unhealthy_time(app: App) -> None:
    app.start()
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    app.after(200)
    app.restart()  # the unhealthy time is in the database, not in the controller
    app.after(99)
    assert "member1" in app.where()
    app.after(1)
    assert "member1" not in app.where()


def test_unchanged_bindings_are_not_read_again(app: App) -> None:
    app.start()
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    assert app.app._due(app.app._candidates(), app.clock.now()) == []
    app.clock.advance(300)
    assert len(app.app._due(app.app._candidates(), app.clock.now())) == 1  # the toleration ran out


@pytest.mark.parametrize(
    ("application", "expected"),
    [
        ({**APPLICATION, "purgeMode": "Never"}, {"purgeMode": "Never", "suppressDeletion": True}),
        ({**APPLICATION, "purgeMode": "Directly"}, {"purgeMode": "Directly"}),
        ({**APPLICATION, "gracePeriodSeconds": 60}, {"purgeMode": "Gracefully", "gracePeriodSeconds": 60}),
    ],
)
def test_purge_mode_and_grace_period_come_from_the_policy(
    app: App, application: dict[str, Any], expected: dict[str, Any]
) -> None:
    app.start(application=application)
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    app.after(300)
    task = app.app_tasks()["member1"]
    assert {
        k: task.get(k) for k in ("purgeMode", "suppressDeletion", "gracePeriodSeconds") if k in task
    } == expected


def test_the_toleration_comes_from_the_policy(app: App) -> None:
    app.start(application={"decisionConditions": {"tolerationSeconds": 30}})
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    app.after(29)
    assert "member1" in app.where()
    app.after(1)
    assert "member1" not in app.where()


# -- the budget -------------------------------------------------------------------------------------------


def fail(app: App, cluster: str, **others: str) -> None:
    """``cluster`` turns Unhealthy and stays so past the toleration."""
    app.health(**{cluster: "Unhealthy"}, **others)
    app.after(0)
    app.after(300)


def test_the_scheduler_avoids_the_clusters_already_tried(app: App) -> None:
    app.start(DUPLICATED_1_3)
    assert set(app.where()) == {"member1", "member2", "member3"}
    fail(app, "member1", member2="Healthy", member3="Healthy")
    app.run()
    app.health(member2="Healthy", member3="Healthy")
    app.eviction.reconcile()  # the new placement is healthy: the task goes, member1 is free again...
    assert app.app_tasks() == {}
    app.run()  # ...and Duplicated reschedules on the task's removal: the tried list keeps member1 out
    assert set(app.where()) == {"member2", "member3"}
    with app.uow() as session:
        [latest] = DecisionRepository(session).history(name=app.rb, limit=1)
    assert latest.explanation["clusters"]["member1"]["filter"]["plugin"] == "Avoid"
    app.annotate(tried=None)  # without the list (as a user may clear it), member1 comes back
    rb = app.binding(app.rb)
    rb["spec"]["rescheduleTriggeredAt"] = format_timestamp(app.clock.advance(1))
    app.replace(rb)
    app.run()
    assert set(app.where()) == {"member1", "member2", "member3"}


def test_spent_budget_stops_evictions_and_says_so_once(app: App) -> None:
    app.start(DUPLICATED_1_3, **{MAX_RESCHEDULES_ANNOTATION: "1"})
    fail(app, "member1", member2="Healthy", member3="Healthy")
    app.run()
    assert set(app.where()) == {"member2", "member3"}
    fail(app, "member2", member3="Healthy")
    assert set(app.where()) == {"member2", "member3"}  # no eviction
    assert "member2" not in app.app_tasks()
    condition = app.exhausted()
    assert condition is not None and (condition["status"], condition["reason"]) == ("True", "BudgetSpent")
    assert "1 reschedule(s) of at most 1" in condition["message"] and "tried: member1" in condition["message"]
    for health in ("Unknown", "Unhealthy", "Unknown", "Unhealthy"):  # flapping: nothing new to say
        app.health(member2=health, member3="Healthy")
        app.after(60)
        condition = app.exhausted()
        assert condition is not None and condition["status"] == "True"
    assert app.events(name=app.rb).count("FailoverExhausted") == 1
    assert [h for h in app.history() if h[0] == "FailoverExhausted"] == [
        ("FailoverExhausted", "member2", "FailoverExhausted")
    ]
    assert app.budget() == ("1", ["member1"])
    app.annotate(limit="2")  # the user raises the budget: the next pass evicts
    app.app.reconcile()
    assert set(app.where()) == {"member3"}
    assert app.budget() == ("2", ["member1", "member2"])
    condition = app.exhausted()
    assert condition is not None and condition["status"] == "False"


def test_exhausted_ends_when_the_workload_is_healthy_again(app: App) -> None:
    app.start(**{MAX_RESCHEDULES_ANNOTATION: "0"})
    fail(app, "member1", member2="Healthy")
    condition = app.exhausted()
    assert condition is not None and condition["status"] == "True"
    app.health(member1="Healthy", member2="Healthy")
    app.after(1)
    condition = app.exhausted()
    assert condition is not None and (condition["status"], condition["reason"]) == ("False", "NotExhausted")
    assert app.where() == {"member1": 1, "member2": 2}


def test_the_policy_gives_the_default_budget_and_the_workload_overrides_it(app: App) -> None:
    app.start(application={**APPLICATION, "maxReschedules": 0})
    fail(app, "member1", member2="Healthy")
    assert "member1" in app.where()  # 0: no reschedule at all
    assert app.exhausted() is not None
    app.annotate(limit="1")
    app.app.reconcile()
    assert "member1" not in app.where()
    assert app.budget() == ("1", ["member1"])


def test_the_avoid_list_is_cleared_when_nothing_else_fits(app: App) -> None:
    two = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
    app.add_cluster("member1")
    app.add_cluster("member2")
    app.create(app_policy(two))
    app.create(
        workload(**{RESCHEDULE_COUNT_ANNOTATION: "2", TRIED_CLUSTERS_ANNOTATION: '["member1","member2"]'})
    )
    app.run()
    assert set(app.where()) == {"member1", "member2"}  # the engine ignored the avoid list...
    assert app.binding(app.rb)["status"]["schedulingExplanation"]["avoidIgnored"] is True
    assert app.budget() == ("2", None)  # ...so the list goes; the count stays and still bounds the moves
    assert ("BudgetChanged", "", "AvoidListCleared") in app.history()
    assert "AvoidListCleared" in app.events(name=app.rb)


def test_a_long_healthy_run_before_the_failure_resets_the_budget(app: App) -> None:
    app.start(
        **{
            MAX_RESCHEDULES_ANNOTATION: "1",
            RESCHEDULE_COUNT_ANNOTATION: "1",
            TRIED_CLUSTERS_ANNOTATION: '["member3"]',
        }
    )
    app.health(member1="Healthy", member2="Healthy")
    app.after(0)
    app.after(1801)  # longer than resetAfterSeconds (1800) before it fails
    fail(app, "member1", member2="Healthy")
    assert "member1" not in app.where()
    assert app.budget() == ("1", ["member1"])
    assert ("BudgetChanged", "member1", "HealthyRunReset") in app.history()
    assert "FailoverBudgetReset" in app.template_events()


def test_a_short_healthy_run_does_not_reset_the_budget(app: App) -> None:
    app.start(
        **{
            MAX_RESCHEDULES_ANNOTATION: "1",
            RESCHEDULE_COUNT_ANNOTATION: "1",
            TRIED_CLUSTERS_ANNOTATION: '["member3"]',
        }
    )
    app.health(member1="Healthy", member2="Healthy")
    app.after(0)
    app.after(1800)
    fail(app, "member1", member2="Healthy")
    assert "member1" in app.where()
    assert app.budget() == ("1", ["member3"])
    assert app.exhausted() is not None


def test_daemonsets_are_exempt(app: App) -> None:
    app.start(DUPLICATED_1_3, kind="DaemonSet")
    assert set(app.where()) == {"member1", "member2", "member3"}
    fail(app, "member1", member2="Healthy", member3="Healthy")
    app.after(10_000)
    assert set(app.where()) == {"member1", "member2", "member3"}
    assert app.rows() == {}
    assert app.budget() == (None, None)


def test_a_bare_pod_carries_the_budget_on_itself(app: App) -> None:
    app.start({"clusterAffinity": {"clusterNames": ["member1", "member2"]}}, kind="Pod", clusters=2)
    assert set(app.where()) == {"member1", "member2"}
    fail(app, "member1", member2="Healthy")
    assert set(app.where()) == {"member2"}
    assert app.budget() == ("1", ["member1"])


def test_a_statefulset_keeps_one_tried_list_per_share(app: App) -> None:
    spread = {
        "clusterAffinity": {"clusterNames": ["member1", "member2", "member3", "member4"]},
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 2}],
    }
    app.start(spread, kind="StatefulSet", clusters=4)
    first = sorted(app.where())
    assert len(first) == 2
    failing, staying = first
    fail(app, failing, **{staying: "Healthy"})
    assert app.budget() == ("1", {failing: [failing], staying: []})  # every share named at the first write
    app.run()
    landed = next(c for c in app.where() if c != staying)
    assert landed not in first
    fail(app, landed, **{staying: "Healthy"})  # the share that started on ``failing`` fails again
    assert app.budget() == ("2", {failing: [failing, landed], staying: []})
    fail(app, staying, **{c: "Healthy" for c in app.where() if c != staying})
    assert app.budget() == ("3", {failing: [failing, landed], staying: [staying]})


def test_disabled_failover_does_nothing(database_url: str) -> None:
    app = App(database_url, enabled=False)
    try:
        app.start()
        fail(app, "member1", member2="Healthy")
        app.after(10_000)
        assert app.where() == {"member1": 1, "member2": 2}
        assert app.rows() == {}
        assert app.budget() == (None, None)
    finally:
        app.close()


def test_bindings_that_leave_application_failover_lose_their_health_rows(app: App) -> None:
    app.start()
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    assert set(app.rows()) == {"member1", "member2"}
    body = app_policy(STATIC_1_2)
    del body["spec"]["failover"]
    app.replace(body)
    app.run()
    app.after(0)
    assert app.rows() == {}


def test_a_restart_sweeps_rows_of_bindings_that_left_unwatched(app: App) -> None:
    app.start()
    app.health(member1="Unhealthy", member2="Healthy")
    app.after(0)
    body = app_policy(STATIC_1_2)
    del body["spec"]["failover"]
    app.replace(body)
    app.run()
    app.restart()  # the new controller never saw the binding with failover
    app.after(0)
    assert app.rows() == {}


# -- the store and the retry --------------------------------------------------------------------------------


def test_health_repository_round_trips_in_bulk(app: App) -> None:
    app.start()
    binding_id = app.binding_id()
    now = app.clock.now()
    first = observe(None, "Unhealthy", now)
    with app.uow() as session:
        repo = HealthRepository(session)
        repo.upsert(
            [
                Observation(binding_id, "member1", first),
                Observation(binding_id, "member2", observe(None, "Healthy", now)),
            ]
        )
    later = observe(first, "Unknown", app.clock.advance(42))
    with app.uow() as session:
        repo = HealthRepository(session)
        repo.upsert([Observation(binding_id, "member1", later)])
        assert repo.for_bindings([binding_id])[binding_id]["member1"] == later
        repo.forget([(binding_id, "member2")])
    with app.uow() as session:
        assert set(HealthRepository(session).for_bindings([binding_id, 999])[binding_id]) == {"member1"}
        assert HealthRepository(session).for_bindings([]) == {}


def test_a_conflict_is_retried_in_a_fresh_savepoint(app: App) -> None:
    calls: list[int] = []

    def work() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise Conflict("Deployment", "default", "web")
        return 7

    with app.uow() as session:
        assert _with_retries(session, work) == 7
    calls.clear()

    def always() -> int:
        calls.append(1)
        raise Conflict("Deployment", "default", "web")

    with app.uow() as session:
        outcome = _with_retries(session, always)
    assert isinstance(outcome, isolation.Failed) and outcome.transient
    assert len(calls) == 3  # then the binding waits for the next pass
