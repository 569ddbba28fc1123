"""``template_writes``: a template ``ObjectRepository.create`` inserts as column values is the row and
change-log event the ORM path makes (``create_pending`` + flush), by three statements, on both backends;
a taken name is ``AlreadyExists``; a Secret still goes through the ORM, sealed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event as sqla_event
from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store import AlreadyExists, objects, template_writes
from federation.store.manifest import split
from federation.store.sealing import SEALED_FIELD
from federation.store.tables import ResourceTemplateRow

from .support import T0, count_statements
from .test_binding_writes import _comparable, _last_event

DEPLOYMENT = ("apps/v1", "Deployment")
NOW = T0 + timedelta(minutes=5)
# Values that differ between two twins whatever the path: their identity and their revisions.
ASSIGNED = ("id", "uid", "name", "resource_version")


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": "web", "tier": "front"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop", "labels": labels, "annotations": {"a": "1"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
        "status": {"replicas": 9},  # the API drops a body's status before; the store keeps what it is given
    }


def _columns(session: Session, name: str) -> dict[str, Any]:
    table = ResourceTemplateRow.__table__
    row = session.execute(select(table).where(table.c.name == name)).one()
    return {key: value for key, value in row._mapping.items() if key not in ASSIGNED}


def test_a_created_template_is_the_row_and_event_the_orm_makes(session: Session) -> None:
    repo = objects(session, *DEPLOYMENT, clock=lambda: NOW)
    repo.create_pending(_deployment("by-orm"))
    session.flush()
    orm_inserts: list[str] = []

    def orm_insert(_mapper: Any, _connection: Any, row: ResourceTemplateRow) -> None:
        orm_inserts.append(row.name)

    sqla_event.listen(ResourceTemplateRow, "before_insert", orm_insert)
    try:
        with count_statements(session.get_bind()) as log:
            answered = repo.create(_deployment("by-columns"))
    finally:
        sqla_event.remove(ResourceTemplateRow, "before_insert", orm_insert)
    # The revision, the change-log row, the INSERT; no ORM object flushed.
    assert log.count == 3 and orm_inserts == [], (log.statements, orm_inserts)
    session.expire_all()
    assert _columns(session, "by-columns") == _columns(session, "by-orm")
    assert _columns(session, "by-columns")["needs_detection"] is True
    assert _columns(session, "by-columns")["dirty_seq"] == 1
    orm_event, event = _last_event(session, "by-orm"), _last_event(session, "by-columns")
    assert (
        (event.event, event.previous_labels)
        == (orm_event.event, orm_event.previous_labels)
        == ("ADDED", None)
    )
    assert _comparable(event.object) == _comparable(orm_event.object)
    stored = objects(session, *DEPLOYMENT).get("shop", "by-columns")
    assert answered == event.object == stored
    assert stored["metadata"]["resourceVersion"] == str(event.revision)
    assert stored["metadata"]["generation"] == 1


def test_a_taken_name_is_already_exists(session: Session) -> None:
    repo = objects(session, *DEPLOYMENT)
    repo.create(_deployment("twice"))
    savepoint = session.begin_nested()
    with pytest.raises(AlreadyExists):
        repo.create(_deployment("twice"))
    savepoint.rollback()
    assert repo.get("shop", "twice")["metadata"]["generation"] == 1


def test_a_secret_is_written_by_the_orm_and_sealed(session: Session) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "shop"},
        "data": {"password": "c2VjcmV0"},
    }
    assert not template_writes.insertable(split(secret))
    with pytest.raises(ValueError, match="Secret"):
        template_writes.insert_new(session, split(secret), "Secret", "v1", NOW)
    answered = objects(session, "v1", "Secret").create(secret)
    assert answered["data"] == {"password": "c2VjcmV0"}
    session.flush()
    table = ResourceTemplateRow.__table__
    stored_extra = session.execute(select(table.c.extra).where(table.c.name == "creds")).scalar_one()
    assert SEALED_FIELD in stored_extra and "data" not in stored_extra
    assert SEALED_FIELD in _last_event(session, "creds").object
