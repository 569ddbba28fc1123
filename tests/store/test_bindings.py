"""Bindings: target-cluster rows mirror spec.clusters, eviction tasks, the scheduling queue flag."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from federation.store import BindingRepository, Conflict, EvictionTask, TargetCluster, objects
from federation.store.tables import BindingTargetClusterRow, GracefulEvictionTaskRow, ResourceBindingRow

from .factories import make_binding
from .support import T0, count_statements

RB = ("work.karmada.io/v1alpha2", "ResourceBinding")


def target_rows(session: Session, name: str) -> dict[str, int]:
    statement = (
        select(BindingTargetClusterRow.cluster_name, BindingTargetClusterRow.replicas)
        .join(ResourceBindingRow)
        .where(ResourceBindingRow.name == name)
    )
    return {name: replicas for name, replicas in session.execute(statement)}


def spec_clusters(obj: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c["replicas"] for c in obj["spec"].get("clusters", [])}


def binding_row(session: Session, name: str) -> ResourceBindingRow:
    row = session.scalars(select(ResourceBindingRow).where(ResourceBindingRow.name == name)).one()
    session.refresh(row)
    return row


def test_target_rows_follow_spec_clusters_through_every_write(session: Session) -> None:
    repo = objects(session, *RB)
    created = repo.create(
        make_binding(clusters=[{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 2}])
    )
    assert target_rows(session, "nginx-deployment") == spec_clusters(created) == {"m1": 1, "m2": 2}
    moved = make_binding(clusters=[{"name": "m2", "replicas": 1}, {"name": "m3", "replicas": 2}])
    replaced = repo.replace(moved)
    assert target_rows(session, "nginx-deployment") == spec_clusters(replaced) == {"m2": 1, "m3": 2}
    placed = BindingRepository(session).set_target_clusters(
        "default", "nginx-deployment", [TargetCluster("m1", 3)]
    )
    assert target_rows(session, "nginx-deployment") == spec_clusters(placed) == {"m1": 3}
    repo.delete("default", "nginx-deployment")
    assert session.scalars(select(BindingTargetClusterRow)).all() == []


def test_bindings_on_cluster_is_one_query(session: Session, engine: Engine) -> None:
    repo = objects(session, *RB)
    for index in range(5):
        clusters = [{"name": "m1", "replicas": 1}] if index % 2 == 0 else [{"name": "m2", "replicas": 1}]
        repo.create(make_binding(f"b{index}", clusters=clusters))
    objects(session, "work.karmada.io/v1alpha2", "ClusterResourceBinding").create(
        make_binding("crb", "", clusters=[{"name": "m1", "replicas": 1}])
    )
    session.commit()
    bindings = BindingRepository(session)
    with count_statements(engine) as log:
        on_m1 = bindings.bindings_on_cluster("m1")
    assert log.count == 1, log.statements
    assert [(b["kind"], b["metadata"]["name"]) for b in on_m1] == [
        ("ClusterResourceBinding", "crb"),
        ("ResourceBinding", "b0"),
        ("ResourceBinding", "b2"),
        ("ResourceBinding", "b4"),
    ]


def test_set_target_clusters_bumps_generation_and_requeues(session: Session) -> None:
    """A change of spec.clusters (an eviction, a user's edit) queues the scheduler: replicas may be short."""
    objects(session, *RB).create(make_binding())
    row = binding_row(session, "nginx-deployment")
    row.needs_scheduling = False  # as if the scheduler had finished
    session.flush()
    placed = BindingRepository(session).set_target_clusters(
        "default", "nginx-deployment", [TargetCluster("m1", 3)]
    )
    assert placed["metadata"]["generation"] == 2
    session.expire_all()
    assert binding_row(session, "nginx-deployment").needs_scheduling is True


def test_spec_change_requeues_and_counts(session: Session) -> None:
    repo = objects(session, *RB)
    repo.create(make_binding())
    row = binding_row(session, "nginx-deployment")
    assert (row.needs_scheduling, row.dirty_seq) == (True, 1)
    row.needs_scheduling = False
    session.flush()
    repo.replace(make_binding(spec={"replicas": 5}))
    row = binding_row(session, "nginx-deployment")
    assert (row.needs_scheduling, row.dirty_seq) == (True, 2)
    assert row.template_uid == "template-uid-1"


def test_stale_set_target_clusters_is_conflict(session: Session) -> None:
    created = objects(session, *RB).create(make_binding())
    objects(session, *RB).replace(make_binding(spec={"replicas": 7}))
    stale = created["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        BindingRepository(session).set_target_clusters(
            "default", "nginx-deployment", [TargetCluster("m1", 1)], expected_rv=stale
        )


def test_eviction_tasks_mirror_spec(session: Session) -> None:
    objects(session, *RB).create(make_binding(clusters=[{"name": "m1", "replicas": 3}]))
    bindings = BindingRepository(session)
    task = EvictionTask(
        from_cluster="m1",
        reason="TaintUntolerated",
        producer="taint-manager",
        replicas=3,
        creation_timestamp=T0,
        grace_period_seconds=600,
        purge_mode="Graciously",
        clusters_before_failover=("m1",),
    )
    row = binding_row(session, "nginx-deployment")
    row.needs_scheduling = False
    session.flush()
    updated = bindings.add_eviction_task("default", "nginx-deployment", task)
    assert updated["spec"]["gracefulEvictionTasks"] == [task.to_spec()]
    assert updated["spec"]["gracefulEvictionTasks"][0]["creationTimestamp"] == "2025-01-01T12:00:00Z"
    assert bindings.eviction_tasks("default", "nginx-deployment") == [task]
    assert bindings.evictions_from_cluster("m1") == [("default", "nginx-deployment", task)]
    assert binding_row(session, "nginx-deployment").needs_scheduling is True  # eviction asks for a reschedule
    again = bindings.add_eviction_task("default", "nginx-deployment", EvictionTask("m1", reason="other"))
    assert again["spec"]["gracefulEvictionTasks"] == [task.to_spec()]  # one task per source cluster
    cleared = bindings.remove_eviction_task("default", "nginx-deployment", "m1")
    assert cleared["spec"]["gracefulEvictionTasks"] == []
    assert session.scalars(select(GracefulEvictionTaskRow)).all() == []


def test_eviction_task_round_trips_through_spec() -> None:
    task = EvictionTask("m2", reason="ApplicationFailure", message="unhealthy", suppress_deletion=True)
    assert EvictionTask.from_spec(task.to_spec()) == task


def test_bindings_for_template(session: Session) -> None:
    objects(session, *RB).create(make_binding("a"))
    objects(session, *RB).create(make_binding("b", spec={"resource": {"uid": "other"}}))
    assert [b["metadata"]["name"] for b in BindingRepository(session).for_template("template-uid-1")] == ["a"]
