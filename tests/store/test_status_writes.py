"""``status_writes``: a template's status written as column values is the same row and change-log event as the
ORM path (``update_status_loaded`` + ``flush_rows``), by a fixed handful of statements, on both backends;
an unchanged status writes nothing; a row that moved is a ``Conflict``; a row the session had loaded is
expired."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Text, cast, select, update
from sqlalchemy.orm import Session

from federation.store import Conflict, bulkflush, derive, objects, status_writes
from federation.store.manifest import view
from federation.store.tables import ChangeLogRow, ResourceTemplateRow, WorkRow

from .factories import make_binding, make_deployment, make_work
from .support import T0, count_statements
from .test_binding_writes import _comparable, _last_event
from .test_secret_sealing import ENCODED, PASSWORD, make_secret

DEPLOYMENT = ("apps/v1", "Deployment")
NOW = T0 + timedelta(minutes=5)
# Values that differ between two twins whatever the path: their identity and their revisions.
ASSIGNED = ("id", "uid", "name", "resource_version")
STATUS = {"replicas": 3, "readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}


def _twins(session: Session) -> dict[str, Any]:
    """Two Deployments alike but for their names (each with an old status); uid → Core row."""
    repo = objects(session, *DEPLOYMENT, clock=lambda: T0)
    for name in ("by-orm", "by-columns"):
        twin = make_deployment("web", metadata={"labels": {"app": "web"}})
        repo.create({**twin, "metadata": {**twin["metadata"], "name": name}})
        repo.update_status("default", name, {"replicas": 1})
    session.flush()
    uids = list(session.scalars(select(ResourceTemplateRow.uid)))
    return status_writes.read_by_uids(session, ResourceTemplateRow, uids)


def _row(rows: dict[str, Any], name: str) -> Any:
    return next(row for row in rows.values() if row.name == name)


def _by_orm(session: Session, name: str, status: Any) -> None:
    repo = objects(session, *DEPLOYMENT, clock=lambda: NOW)
    row = repo.require_row("default", name)
    repo.update_status_loaded(row, status, flush=False)
    bulkflush.flush_rows(session, [row])


def _columns(session: Session, name: str) -> dict[str, Any]:
    table = ResourceTemplateRow.__table__
    row = session.execute(select(table).where(table.c.name == name)).one()
    return {key: value for key, value in row._mapping.items() if key not in ASSIGNED}


def test_a_status_write_is_the_row_and_event_the_orm_makes(session: Session) -> None:
    rows = _twins(session)
    _by_orm(session, "by-orm", STATUS)
    [written] = status_writes.write(
        session, ResourceTemplateRow, [status_writes.StatusWrite(_row(rows, "by-columns"), STATUS)], NOW
    )
    session.expire_all()
    assert _columns(session, "by-columns") == _columns(session, "by-orm")
    orm_event, event = _last_event(session, "by-orm"), _last_event(session, "by-columns")
    assert (event.event, event.previous_labels) == (orm_event.event, orm_event.previous_labels)
    assert _comparable(event.object) == _comparable(orm_event.object)
    stored = objects(session, *DEPLOYMENT).get("default", "by-columns")
    assert event.object == stored and written == stored
    assert stored["status"] == STATUS and stored["metadata"]["generation"] == 1
    assert int(stored["metadata"]["resourceVersion"]) > _row(rows, "by-columns").resource_version


def test_a_batch_is_a_fixed_handful_of_statements_and_nothing_for_no_change(session: Session) -> None:
    repo = objects(session, *DEPLOYMENT)
    for index in range(5):
        repo.create(make_deployment(f"d{index}"))
    session.flush()
    rows = status_writes.read_by_uids(
        session, ResourceTemplateRow, list(session.scalars(select(ResourceTemplateRow.uid)))
    )
    writes = [
        status_writes.StatusWrite(row, {**STATUS, "replicas": i}) for i, row in enumerate(rows.values())
    ]
    with count_statements(session.get_bind()) as log:
        written = status_writes.write(session, ResourceTemplateRow, writes, NOW)
    # The revisions, the change-log rows, one UPDATE.
    assert log.count == 3, log.statements
    assert [w["status"]["replicas"] for w in written] == list(range(5))
    again = status_writes.read_by_uids(session, ResourceTemplateRow, list(rows))
    with count_statements(session.get_bind()) as log:
        unchanged = status_writes.write(
            session,
            ResourceTemplateRow,
            [status_writes.StatusWrite(r, r.status) for r in again.values()],
            NOW,
        )
    assert log.count == 0 and unchanged == [view(row) for row in again.values()]


def test_absent_uids_are_missing(session: Session) -> None:
    rows = _twins(session)
    found = status_writes.read_by_uids(session, ResourceTemplateRow, [*rows, "no-such-uid"])
    assert set(found) == set(rows)
    assert status_writes.read_by_uids(session, ResourceTemplateRow, []) == {}


def test_a_row_that_moved_is_a_conflict_and_nothing_is_left_written(session: Session) -> None:
    rows = _twins(session)
    stored = _row(rows, "by-columns")
    table = ResourceTemplateRow.__table__
    session.execute(  # a concurrent writer, after the read
        update(table).where(table.c.id == stored.id).values(resource_version=table.c.resource_version + 1)
    )
    savepoint = session.begin_nested()
    with pytest.raises(Conflict, match="by-columns"):
        status_writes.write(session, ResourceTemplateRow, [status_writes.StatusWrite(stored, STATUS)], NOW)
    savepoint.rollback()
    assert objects(session, *DEPLOYMENT).get("default", "by-columns")["status"] == {"replicas": 1}


def test_a_row_the_session_had_loaded_is_expired(session: Session) -> None:
    rows = _twins(session)
    loaded = objects(session, *DEPLOYMENT).require_row("default", "by-columns")
    assert loaded.status == {"replicas": 1}
    status_writes.write(
        session, ResourceTemplateRow, [status_writes.StatusWrite(_row(rows, "by-columns"), STATUS)], NOW
    )
    assert loaded.status == STATUS


WORK = ("work.karmada.io/v1alpha1", "Work")
APPLIED = {
    "conditions": [{"type": "Applied", "status": "True"}],
    "manifestStatuses": [{"identifier": {"ordinal": 0, "kind": "Deployment"}, "health": "Healthy"}],
}


def _work_twins(session: Session, manifests: list[dict[str, Any]] | None = None) -> dict[int, Any]:
    objects(session, "work.karmada.io/v1alpha2", "ResourceBinding").create(make_binding())  # the Works'
    repo = objects(session, *WORK, clock=lambda: T0)
    for name in ("by-orm", "by-columns"):
        work = make_work(name, "member1")
        if manifests is not None:
            work["spec"] = {"workload": {"manifests": manifests}}
        repo.create(work)
        repo.update_status(
            "karmada-es-member1", name, {"conditions": [{"type": "Applied", "status": "False"}]}
        )
    session.flush()
    ids = list(session.scalars(select(WorkRow.id)))
    return status_writes.read_by_ids(session, WorkRow, ids, also=("binding_id",))


def test_a_work_status_is_the_row_and_event_the_orm_makes_with_applied_derived(session: Session) -> None:
    rows = _work_twins(session)
    repo = objects(session, *WORK, clock=lambda: NOW)
    row = repo.require_row("karmada-es-member1", "by-orm")
    repo.update_status_loaded(row, APPLIED, flush=False)
    bulkflush.flush_rows(session, [row])
    stored = _row(rows, "by-columns")
    assert stored.binding_id is not None  # ``also``
    [written] = status_writes.write(
        session, WorkRow, [status_writes.StatusWrite(stored, APPLIED)], NOW, derive.work_status_columns
    )
    session.expire_all()
    table = WorkRow.__table__
    columns = {
        name: {
            k: v for k, v in session.execute(select(table).where(table.c.name == name)).one()._mapping.items()
        }
        for name in ("by-orm", "by-columns")
    }
    assert {k: v for k, v in columns["by-columns"].items() if k not in ASSIGNED} == {
        k: v for k, v in columns["by-orm"].items() if k not in ASSIGNED
    }
    assert columns["by-columns"]["applied"] is True
    assert _comparable(_last_event(session, "by-columns").object) == _comparable(
        _last_event(session, "by-orm").object
    )
    assert written == objects(session, *WORK).get("karmada-es-member1", "by-columns")


def test_a_secret_works_status_write_keeps_its_data_sealed(session: Session) -> None:
    rows = _work_twins(session, [make_secret()])
    status_writes.write(
        session,
        WorkRow,
        [status_writes.StatusWrite(_row(rows, "by-columns"), APPLIED)],
        NOW,
        derive.work_status_columns,
    )
    event = session.scalar(
        select(cast(ChangeLogRow.object, Text))
        .where(ChangeLogRow.name == "by-columns")
        .order_by(ChangeLogRow.revision.desc())
    )
    assert event is not None and "sealedData" in event and PASSWORD not in event and ENCODED not in event
    stored = session.scalar(select(cast(WorkRow.spec, Text)).where(WorkRow.name == "by-columns"))
    assert stored is not None and PASSWORD not in stored and ENCODED not in stored
    got = objects(session, *WORK).get("karmada-es-member1", "by-columns")
    assert got["status"] == APPLIED
    assert got["spec"]["workload"]["manifests"][0]["data"] == make_secret()["data"]
