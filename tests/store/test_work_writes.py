"""``work_writes``: new Works and tombstones written as column values give the same rows and change-log events
as the ORM's ``create`` and a ``replace`` with the tombstone, by a fixed handful of statements, on both
backends; a Work changed since its summary was read is a ``Conflict`` and nothing is written."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Text, cast, select, update
from sqlalchemy.orm import Session

from federation.controllers.rendering import tombstoned, tombstoned_extra
from federation.store import BindingRepository, Conflict, WorkRepository, objects, work_writes
from federation.store.tables import ChangeLogRow, WorkRow

from .factories import make_binding, make_work
from .support import T0, count_statements
from .test_secret_sealing import ENCODED, PASSWORD, make_secret

WORK = ("work.karmada.io/v1alpha1", "Work")
RB = ("work.karmada.io/v1alpha2", "ResourceBinding")
TIMESTAMP = "2026-05-01T12:00:00Z"
# Server-assigned values that differ between any two creates.
ASSIGNED = ("id", "uid", "resource_version", "created_at", "updated_at")


def _columns(session: Session, namespace: str, name: str) -> dict[str, Any]:
    table = WorkRow.__table__
    row = session.execute(select(table).where(table.c.namespace == namespace, table.c.name == name)).one()
    return {key: value for key, value in row._mapping.items() if key not in ASSIGNED}


def _event(session: Session, namespace: str, name: str) -> tuple[str, dict[str, Any]]:
    row = session.scalars(
        select(ChangeLogRow)
        .where(ChangeLogRow.namespace == namespace, ChangeLogRow.name == name)
        .order_by(ChangeLogRow.revision.desc())
    ).first()
    assert row is not None
    return row.event, row.object


def _comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest less what any two creates differ in (its name too: the two Works are named apart)."""
    skipped = ("uid", "resourceVersion", "creationTimestamp", "name")
    return {**manifest, "metadata": {k: v for k, v in manifest["metadata"].items() if k not in skipped}}


def _work(name: str, cluster: str) -> dict[str, Any]:
    work = make_work(name, cluster)
    work["metadata"]["finalizers"] = ["karmada.io/execution-controller"]
    work["metadata"]["labels"] = {"app": "nginx"}
    return work


def test_a_new_work_is_the_row_and_event_a_create_makes(session: Session) -> None:
    objects(session, *RB).create(make_binding())
    binding_id = BindingRepository(session).objects("default").require_row("default", "nginx-deployment").id
    objects(session, *WORK).create(_work("by-orm", "member1"))
    with count_statements(session.get_bind()) as log:
        assert work_writes.insert_new(session, [(_work("by-columns", "member1"), binding_id)], T0) == 1
    assert log.count == 3  # the revision, the change-log row, the INSERT
    orm = _columns(session, "karmada-es-member1", "by-orm")
    direct = _columns(session, "karmada-es-member1", "by-columns")
    assert {**orm, "name": "by-columns"} == direct
    assert (direct["cluster_name"], direct["binding_id"], direct["needs_sync"]) == (
        "member1",
        binding_id,
        True,
    )
    event, logged = _event(session, "karmada-es-member1", "by-columns")
    stored = objects(session, *WORK).get("karmada-es-member1", "by-columns")
    assert event == "ADDED" and logged == stored
    _, orm_logged = _event(session, "karmada-es-member1", "by-orm")
    assert _comparable(orm_logged) == _comparable(logged)


def test_a_new_work_of_another_kind_is_refused_by_field(session: Session) -> None:
    work = {**_work("w", "member1"), "kind": "Deployment"}
    with pytest.raises(ValueError, match="kind: expected Work"):
        work_writes.insert_new(session, [(work, None)], T0)
    assert session.scalars(select(WorkRow)).all() == []


def _summarised(session: Session, names: list[str]) -> list[work_writes.Tombstone]:
    summaries = {
        s.name: s
        for s in WorkRepository(session).summaries_by_keys([("karmada-es-member1", n) for n in names])
    }
    return [
        work_writes.Tombstone(
            s.id, s.namespace, s.name, s.resource_version, tombstoned_extra(s.metadata_extra, TIMESTAMP)
        )
        for s in (summaries[n] for n in names)
    ]


def test_tombstones_are_the_rows_and_events_a_replace_makes(session: Session) -> None:
    repo = objects(session, *WORK)
    names = ["w0", "w1", "w2"]
    created = {n: repo.create(_work(n, "member1")) for n in [*names, "by-orm"]}
    works = WorkRepository(session)
    for name in created:
        works.mark_synced("karmada-es-member1", name)
    repo.replace(tombstoned(created["by-orm"], TIMESTAMP))
    works.mark_needs_sync("karmada-es-member1", "by-orm")  # as ``execution.apply_plan`` does
    marked = _summarised(session, names)
    with count_statements(session.get_bind()) as log:
        work_writes.tombstone(session, marked, T0)
    # Their stored columns, one statement for the revisions, one logs them, one executemany UPDATE.
    assert log.count == 4, log.statements
    orm = _columns(session, "karmada-es-member1", "by-orm")
    revisions = set()
    for name in names:
        assert _columns(session, "karmada-es-member1", name) == {**orm, "name": name}
        event, logged = _event(session, "karmada-es-member1", name)
        stored = repo.get("karmada-es-member1", name)
        assert event == "MODIFIED" and logged == stored
        assert stored["metadata"]["deletionTimestamp"] == TIMESTAMP
        revisions.add(stored["metadata"]["resourceVersion"])
        assert int(stored["metadata"]["resourceVersion"]) > int(created[name]["metadata"]["resourceVersion"])
    assert len(revisions) == 3


def test_a_work_changed_since_its_summary_is_a_conflict_and_nothing_is_written(session: Session) -> None:
    repo = objects(session, *WORK)
    for name in ("w0", "w1"):
        repo.create(_work(name, "member1"))
    marked = _summarised(session, ["w0", "w1"])
    table = WorkRow.__table__
    session.execute(  # a concurrent writer bumps w1 behind the summary's back
        update(table).where(table.c.name == "w1").values(resource_version=table.c.resource_version + 1)
    )
    with pytest.raises(Conflict, match="w1"):
        work_writes.tombstone(session, marked, T0)
    for name in ("w0", "w1"):
        assert "deletionTimestamp" not in repo.get("karmada-es-member1", name)["metadata"]


def test_a_tombstoned_secret_stays_sealed_in_the_log(session: Session) -> None:
    secret_work = _work("secret", "member1")
    secret_work["spec"] = {"workload": {"manifests": [make_secret()]}}
    assert work_writes.spec_carries_secret(secret_work["spec"])
    objects(session, *WORK).create(secret_work)
    session.flush()
    work_writes.tombstone(session, _summarised(session, ["secret"]), T0)
    texts = [
        str(t)
        for t in session.scalars(
            select(cast(ChangeLogRow.object, Text)).where(ChangeLogRow.event == "MODIFIED")
        )
    ]
    assert len(texts) == 1 and PASSWORD not in texts[0] and ENCODED not in texts[0]
    assert "sealedData" in texts[0] and TIMESTAMP in texts[0]
    # What a GET returns is the plaintext, tombstoned.
    got = objects(session, *WORK).get("karmada-es-member1", "secret")
    assert got["metadata"]["deletionTimestamp"] == TIMESTAMP
    assert got["spec"]["workload"]["manifests"][0]["data"] == make_secret()["data"]
