"""Claiming dirty bindings/works: order, leases, back-off, lost-update safety, disjointness on Postgres."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select, update

from federation.store import UnitOfWork, claim, objects, release
from federation.store.claims import claim_rows, mark_dirty
from federation.store.tables import ResourceBindingRow, WorkRow

from .factories import make_binding, make_work
from .support import T0, count_statements

RB = ("work.karmada.io/v1alpha2", "ResourceBinding")


def seed_bindings(uow: UnitOfWork, count: int) -> None:
    with uow() as session:
        repo = objects(session, *RB)
        for index in range(count):
            repo.create(make_binding(f"b{index:02d}"))


def claimed_names(claims: list) -> list[str]:
    return [c.name for c in claims]


def test_claim_takes_dirty_rows_in_id_order_in_one_statement(uow: UnitOfWork, engine: Engine) -> None:
    seed_bindings(uow, 5)
    with uow() as session, count_statements(engine) as log:
        claims = claim(session, ResourceBindingRow, "sched-a", 3, T0, 30)
    assert claimed_names(claims) == ["b00", "b01", "b02"]
    assert len([s for s in log.statements if "UPDATE" in s.upper()]) == 1
    assert claims[0].kind == "ResourceBinding" and claims[0].namespace == "default"
    with uow() as session:
        assert claimed_names(claim(session, ResourceBindingRow, "sched-b", 10, T0, 30)) == ["b03", "b04"]
        assert claim(session, ResourceBindingRow, "sched-c", 10, T0, 30) == []


def test_claim_rows_hands_out_the_rows_as_claimed_by_the_same_statement(
    uow: UnitOfWork, engine: Engine
) -> None:
    seed_bindings(uow, 3)
    with uow() as session, count_statements(engine) as log:
        pairs = claim_rows(
            session, ResourceBindingRow, "sched-a", 2, T0, 30, columns=("id", "spec", "claimed_by", "name")
        )
    assert log.count == 1
    assert claimed_names([c for c, _ in pairs]) == ["b00", "b01"]
    for item, row in pairs:
        assert (row.id, row.name, row.claimed_by) == (item.id, item.name, "sched-a")
        assert row.spec == make_binding(item.name)["spec"]
    with uow() as session:  # the rows are claimed: a plain claim finds only the third
        assert claimed_names(claim(session, ResourceBindingRow, "sched-b", 10, T0, 30)) == ["b02"]


def test_claim_does_not_bump_resource_version(uow: UnitOfWork) -> None:
    seed_bindings(uow, 1)
    with uow() as session:
        before = objects(session, *RB).get("default", "b00")
        claims = claim(session, ResourceBindingRow, "sched-a", 1, T0, 30)
        release(session, ResourceBindingRow, claims, "sched-a", done=True)
    with uow() as session:
        got = objects(session, *RB).get("default", "b00")
    assert before is not None and got is not None
    assert got["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_expired_claim_can_be_taken_over(uow: UnitOfWork) -> None:
    seed_bindings(uow, 1)
    with uow() as session:
        claim(session, ResourceBindingRow, "sched-a", 1, T0, 30)
    with uow() as session:
        assert claim(session, ResourceBindingRow, "sched-b", 1, T0.replace(second=29), 30) == []
        assert claimed_names(claim(session, ResourceBindingRow, "sched-b", 1, T0.replace(second=30), 30)) == [
            "b00"
        ]


def test_release_done_clears_flag_failure_backs_off(uow: UnitOfWork) -> None:
    seed_bindings(uow, 2)
    with uow() as session:
        first, second = claim(session, ResourceBindingRow, "s", 2, T0, 30)
        release(session, ResourceBindingRow, [first], "s", done=True)
        release(session, ResourceBindingRow, [second], "s", done=False, retry_at=T0.replace(minute=5))
    with uow() as session:
        assert claim(session, ResourceBindingRow, "s", 5, T0.replace(minute=4), 30) == []
        assert claimed_names(claim(session, ResourceBindingRow, "s", 5, T0.replace(minute=5), 30)) == ["b01"]
        flags = dict(
            session.execute(select(ResourceBindingRow.name, ResourceBindingRow.needs_scheduling)).all()
        )
    assert flags == {"b00": False, "b01": True}


def test_a_done_release_is_one_statement_on_postgres_and_resets_failures(
    uow: UnitOfWork, engine: Engine
) -> None:
    seed_bindings(uow, 3)
    with uow() as session:
        claims = claim(session, ResourceBindingRow, "s", 3, T0, 30)
        session.execute(update(ResourceBindingRow).values(failures=4, next_attempt_at=T0))
    with uow() as session, count_statements(engine) as log:
        release(session, ResourceBindingRow, claims, "s", done=True)
    assert len(log.statements) == (1 if engine.dialect.name == "postgresql" else 2)
    with uow() as session:
        rows = session.execute(
            select(
                ResourceBindingRow.claimed_by,
                ResourceBindingRow.needs_scheduling,
                ResourceBindingRow.failures,
                ResourceBindingRow.next_attempt_at,
            )
        ).all()
    assert {tuple(r) for r in rows} == {(None, False, 0, None)}


def test_change_during_work_survives_release(uow: UnitOfWork) -> None:
    seed_bindings(uow, 1)
    with uow() as session:
        claims = claim(session, ResourceBindingRow, "s", 1, T0, 30)
    with uow() as session:  # the API changes the binding while the scheduler works
        objects(session, *RB).replace(make_binding("b00", spec={"replicas": 9}))
    with uow() as session:
        release(session, ResourceBindingRow, claims, "s", done=True)
    with uow() as session:
        assert claimed_names(claim(session, ResourceBindingRow, "s", 1, T0, 30)) == ["b00"]


def test_release_by_another_owner_is_ignored(uow: UnitOfWork) -> None:
    seed_bindings(uow, 1)
    with uow() as session:
        claims = claim(session, ResourceBindingRow, "a", 1, T0, 30)
        release(session, ResourceBindingRow, claims, "b", done=True)
        row = session.scalars(select(ResourceBindingRow)).one()
        session.refresh(row)
        assert (row.claimed_by, row.needs_scheduling) == ("a", True)


def test_works_queue_and_mark_dirty(uow: UnitOfWork) -> None:
    with uow() as session:
        objects(session, "work.karmada.io/v1alpha1", "Work").create(make_work(binding=None))
    with uow() as session:
        claims = claim(session, WorkRow, "sync", 5, T0, 30)
        assert claimed_names(claims) == ["nginx-687f7fb96f"]
        release(session, WorkRow, claims, "sync", done=True)
    with uow() as session:
        assert claim(session, WorkRow, "sync", 5, T0, 30) == []
        mark_dirty(session, WorkRow, [claims[0].id])
    with uow() as session:
        assert claimed_names(claim(session, WorkRow, "sync", 5, T0, 30)) == ["nginx-687f7fb96f"]


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_concurrent_claims_are_disjoint_on_postgres(uow: UnitOfWork, engine: Engine) -> None:
    """Two open transactions claim at once: SKIP LOCKED hands each a different set, nobody waits."""
    seed_bindings(uow, 6)
    assert engine.dialect.name == "postgresql"
    with uow() as first, uow() as second:
        mine = claim(first, ResourceBindingRow, "a", 4, T0, 30)  # locks b00..b03, not committed yet
        theirs = claim(second, ResourceBindingRow, "b", 4, T0, 30)
    assert claimed_names(mine) == ["b00", "b01", "b02", "b03"]
    assert claimed_names(theirs) == ["b04", "b05"]
