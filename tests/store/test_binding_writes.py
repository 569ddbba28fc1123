"""``binding_writes``: a binding rewritten as column values is the same row, target rows and change-log event
as the ORM path (``replace_loaded`` + ``update_status_loaded`` + ``flush_rows``), by a fixed handful of
statements, on both backends; a row that moved is a ``Conflict``; eviction-task changes are refused."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from federation.store import BindingRepository, Conflict, binding_writes, bulkflush, objects
from federation.store.manifest import split, view
from federation.store.tables import BindingTargetClusterRow, ChangeLogRow, ResourceBindingRow

from .factories import make_binding
from .support import T0, count_statements

RB = ("work.karmada.io/v1alpha2", "ResourceBinding")
NOW = T0 + timedelta(minutes=5)
# Values that differ between two twins whatever the path: their identity and their revisions.
ASSIGNED = ("id", "uid", "name", "resource_version")
OLD_CLUSTERS = [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}]
NEW_CLUSTERS = [{"name": "member2", "replicas": 2}, {"name": "member3", "replicas": 1}]


def _twins(session: Session, **overrides: Any) -> None:
    repo = objects(session, *RB, clock=lambda: T0)
    for name in ("by-orm", "by-columns"):
        repo.create(make_binding(name, clusters=OLD_CLUSTERS, **overrides))
        repo.update_status("default", name, {"conditions": [{"type": "Scheduled", "status": "True"}]})
    session.flush()


def _scheduled(binding: dict[str, Any]) -> dict[str, Any]:
    """What a scheduler write changes: spec.clusters, an annotation and the status."""
    out = {k: v for k, v in binding.items()}
    out["spec"] = {**binding["spec"], "clusters": NEW_CLUSTERS}
    out["metadata"] = {
        **binding["metadata"],
        "annotations": {**(binding["metadata"].get("annotations") or {}), "applied": "yes"},
    }
    out["status"] = {"conditions": [{"type": "Scheduled", "status": "True"}], "lastScheduledTime": "now"}
    return out


def _by_orm(session: Session, name: str, change: Any) -> None:
    row = BindingRepository(session).objects("default").require_row("default", name)
    written = change(view(row))
    repo = BindingRepository(session, clock=lambda: NOW).objects("default")
    with bulkflush.deferred_children(session) as children:
        repo.replace_loaded(row, split(written), flush=False)
        repo.update_status_loaded(row, written.get("status"), flush=False)
    bulkflush.flush_rows(session, [row], children)


def _by_columns(session: Session, name: str, change: Any) -> list[dict[str, Any]]:
    row_id = BindingRepository(session).objects("default").require_row("default", name).id
    stored = binding_writes.read(session, [row_id])[row_id]
    return binding_writes.rewrite(session, [binding_writes.Rewrite(stored, change(view(stored)))], NOW)


def _columns(session: Session, name: str) -> dict[str, Any]:
    table = ResourceBindingRow.__table__
    row = session.execute(select(table).where(table.c.name == name)).one()
    return {key: value for key, value in row._mapping.items() if key not in ASSIGNED}


def _targets(session: Session, name: str, column: Any = BindingTargetClusterRow.replicas) -> dict[str, int]:
    """The binding's target rows: cluster name → ``column`` (replicas, or the row's id)."""
    rows = session.execute(
        select(BindingTargetClusterRow.cluster_name, column)
        .join(ResourceBindingRow, ResourceBindingRow.id == BindingTargetClusterRow.binding_id)
        .where(ResourceBindingRow.name == name)
    )
    return {name: value for name, value in rows}


def _last_event(session: Session, name: str) -> ChangeLogRow:
    row = session.scalars(
        select(ChangeLogRow).where(ChangeLogRow.name == name).order_by(ChangeLogRow.revision.desc())
    ).first()
    assert row is not None
    return row


def _comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    skipped = ("uid", "resourceVersion", "name")
    return {**manifest, "metadata": {k: v for k, v in manifest["metadata"].items() if k not in skipped}}


def _same_as_orm(session: Session, change: Any) -> list[dict[str, Any]]:
    _by_orm(session, "by-orm", change)
    answered = _by_columns(session, "by-columns", change)
    session.expire_all()
    assert _columns(session, "by-columns") == _columns(session, "by-orm")
    assert _targets(session, "by-columns") == _targets(session, "by-orm")
    orm_event, event = _last_event(session, "by-orm"), _last_event(session, "by-columns")
    assert (event.event, event.previous_labels) == (orm_event.event, orm_event.previous_labels)
    assert _comparable(event.object) == _comparable(orm_event.object)
    stored = objects(session, *RB).get("default", "by-columns")
    assert event.object == stored and answered == [stored]
    return answered


def test_a_scheduler_write_is_the_row_targets_and_event_the_orm_makes(session: Session) -> None:
    _twins(session)
    [written] = _same_as_orm(session, _scheduled)
    assert written["metadata"]["generation"] == 2
    assert _targets(session, "by-columns") == {"member2": 2, "member3": 1}
    assert _columns(session, "by-columns")["needs_scheduling"] is True  # a spec change queues it


def test_a_trigger_and_a_label_change_are_what_the_orm_makes(session: Session) -> None:
    _twins(session)

    def triggered(binding: dict[str, Any]) -> dict[str, Any]:
        spec = {**binding["spec"], "rescheduleTriggeredAt": "2026-01-01T00:00:00Z"}
        metadata = {**binding["metadata"], "labels": {"team": "a"}}
        return {**binding, "spec": spec, "metadata": metadata}

    _same_as_orm(session, triggered)
    assert _last_event(session, "by-columns").previous_labels == {}


def test_a_status_write_bumps_no_generation_and_queues_nothing(session: Session) -> None:
    _twins(session)
    table = ResourceBindingRow.__table__
    session.execute(update(table).values(needs_scheduling=False))

    def status_only(binding: dict[str, Any]) -> dict[str, Any]:
        return {**binding, "status": {"conditions": [{"type": "Scheduled", "status": "False"}]}}

    [written] = _same_as_orm(session, status_only)
    assert written["metadata"]["generation"] == 1
    columns = _columns(session, "by-columns")
    assert columns["needs_scheduling"] is False and columns["cluster_sensitive"] is True


def test_a_batch_is_a_fixed_handful_of_statements_and_nothing_for_no_change(session: Session) -> None:
    repo = objects(session, *RB)
    for index in range(5):
        repo.create(make_binding(f"b{index}", clusters=OLD_CLUSTERS))
    session.flush()
    stored = binding_writes.read(session, [r.id for r in session.scalars(select(ResourceBindingRow))])
    rewrites = [binding_writes.Rewrite(row, _scheduled(view(row))) for row in stored.values()]
    with count_statements(session.get_bind()) as log:
        written = binding_writes.rewrite(session, rewrites, NOW)
    # Delete and insert the target rows, the revisions, the change-log rows, one UPDATE.
    assert log.count == 5, log.statements
    assert [w["metadata"]["name"] for w in written] == [f"b{i}" for i in range(5)]
    again = binding_writes.read(session, stored)
    with count_statements(session.get_bind()) as log:
        unchanged = binding_writes.rewrite(
            session, [binding_writes.Rewrite(row, view(row)) for row in again.values()], NOW
        )
    assert log.count == 0 and unchanged == [view(row) for row in again.values()]


@pytest.mark.parametrize(
    ("new_clusters", "kept"),
    [
        (NEW_CLUSTERS, set()),  # member1 gone, member2 changed, member3 new
        ([*OLD_CLUSTERS, {"name": "member3", "replicas": 4}], {"member1", "member2"}),  # one added
        ([{"name": "member2", "replicas": 1}], {"member2"}),  # one removed, nothing inserted
        ([{"name": "member9", "replicas": 3}], set()),  # all moved
        ([], set()),  # none left
    ],
)
def test_only_the_target_rows_that_changed_are_rewritten(
    session: Session, new_clusters: list[dict[str, Any]], kept: set[str]
) -> None:
    _twins(session)
    before = _targets(session, "by-columns", BindingTargetClusterRow.id)

    def moved(binding: dict[str, Any]) -> dict[str, Any]:
        return {**binding, "spec": {**binding["spec"], "clusters": new_clusters}}

    _same_as_orm(session, moved)
    after = _targets(session, "by-columns", BindingTargetClusterRow.id)
    assert _targets(session, "by-columns") == {c["name"]: c["replicas"] for c in new_clusters}
    assert {name for name, row_id in after.items() if before.get(name) == row_id} == kept
    assert _targets(session, "by-orm") == _targets(session, "by-columns")


def test_a_row_that_moved_is_a_conflict(session: Session) -> None:
    _twins(session)
    row_id = BindingRepository(session).objects("default").require_row("default", "by-columns").id
    stored = binding_writes.read(session, [row_id])[row_id]
    table = ResourceBindingRow.__table__
    session.execute(  # a concurrent writer, after the read
        update(table).where(table.c.id == row_id).values(resource_version=table.c.resource_version + 1)
    )
    savepoint = session.begin_nested()
    with pytest.raises(Conflict, match="by-columns"):
        binding_writes.rewrite(session, [binding_writes.Rewrite(stored, _scheduled(view(stored)))], NOW)
    savepoint.rollback()
    assert _targets(session, "by-columns") == {"member1": 2, "member2": 1}


def test_an_eviction_task_change_is_refused_before_anything_is_written(session: Session) -> None:
    _twins(session)
    row_id = BindingRepository(session).objects("default").require_row("default", "by-columns").id
    stored = binding_writes.read(session, [row_id])[row_id]
    task = {"fromCluster": "member1", "reason": "TaintUntolerated", "producer": "taint-manager"}
    evicted = {**view(stored), "spec": {**stored.spec, "gracefulEvictionTasks": [task]}}
    with (
        count_statements(session.get_bind()) as log,
        pytest.raises(ValueError, match="gracefulEvictionTasks"),
    ):
        binding_writes.rewrite(session, [binding_writes.Rewrite(stored, evicted)], NOW)
    assert log.count == 0


def _detected(name: str) -> dict[str, Any]:
    """A new binding as the detector plans it: labels, an owner, no clusters."""
    binding = make_binding(name, clusters=[])
    binding["spec"].pop("clusters", None)
    binding["metadata"]["labels"] = {"propagationpolicy.karmada.io/name": "pp", "app": "web"}
    binding["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]
    return binding


def test_a_new_binding_is_the_row_and_event_a_create_makes(session: Session) -> None:
    objects(session, *RB, clock=lambda: NOW).create(_detected("by-orm"))
    session.flush()
    with count_statements(session.get_bind()) as log:
        inserted = binding_writes.insert_new(session, [_detected("by-columns"), _detected("other")], NOW)
    # The revisions, the change-log rows, one INSERT.
    assert inserted == 2 and log.count == 3, log.statements
    session.expire_all()
    assert _columns(session, "by-columns") == _columns(session, "by-orm")
    assert _columns(session, "by-columns")["needs_scheduling"] is True
    assert _columns(session, "by-columns")["policy_key"] == "PropagationPolicy//pp"
    assert _targets(session, "by-columns") == {}
    orm_event, event = _last_event(session, "by-orm"), _last_event(session, "by-columns")
    assert (
        (event.event, event.previous_labels)
        == (orm_event.event, orm_event.previous_labels)
        == ("ADDED", None)
    )
    assert _comparable(event.object) == _comparable(orm_event.object)
    assert event.object == objects(session, *RB).get("default", "by-columns")


def test_only_a_binding_without_child_rows_is_inserted_as_columns(session: Session) -> None:
    assert binding_writes.insertable(_detected("new"))
    assert not binding_writes.insertable(make_binding("placed", clusters=OLD_CLUSTERS))
    task = {"fromCluster": "member1", "reason": "TaintUntolerated", "producer": "taint-manager"}
    evicting = _detected("evicting")
    evicting["spec"]["gracefulEvictionTasks"] = [task]
    assert not binding_writes.insertable(evicting)
    with count_statements(session.get_bind()) as log, pytest.raises(ValueError, match="placed"):
        binding_writes.insert_new(
            session, [_detected("fine"), make_binding("placed", clusters=OLD_CLUSTERS)], NOW
        )
    assert log.count == 0


def test_a_name_taken_fails_the_insert(session: Session) -> None:
    binding_writes.insert_new(session, [_detected("twice")], NOW)
    savepoint = session.begin_nested()
    with pytest.raises(IntegrityError):
        binding_writes.insert_new(session, [_detected("twice")], NOW)
    savepoint.rollback()
    assert objects(session, *RB).get("default", "twice")["metadata"]["generation"] == 1
