"""The leader's fence and claim renewal, on both backends, with explicit time.

A guarded unit of work commits a write only while its holder has the leader lease (checked inside the
transaction); claims are renewed while the pass that took them runs and dropped by a new leader.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import OperationalError

from federation.store import LeaseRepository, UnitOfWork, claims, objects
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import Timeouts, make_engine
from federation.store.leases import LeaseLost
from federation.store.tables import ResourceTemplateRow, metadata, table_of
from tests.conftest import _reset_postgres

from .factories import make_deployment
from .support import T0, count_statements

DEPLOYMENTS = ("apps/v1", "Deployment")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fenced(uow: UnitOfWork, holder: str, now: datetime) -> UnitOfWork:
    return uow.guarded(lambda session: LeaseRepository(session).assert_leader(holder, now))


def deployment_names(uow: UnitOfWork) -> set[str]:
    with uow() as session:
        listed, _ = objects(session, *DEPLOYMENTS).list("default")
    return {d["metadata"]["name"] for d in listed}


def test_the_holder_writes_and_a_deposed_leader_writes_nothing(uow: UnitOfWork) -> None:
    with uow() as session:
        assert LeaseRepository(session).try_acquire("a", at(0), 15)
    with fenced(uow, "a", at(5))() as session:
        objects(session, *DEPLOYMENTS).create(make_deployment("by-a"))
    with uow() as session:
        assert LeaseRepository(session).try_acquire("b", at(15), 15)  # a's lease ran out: b takes over
    with pytest.raises(LeaseLost, match=r"not held by a .*holder: b"), fenced(uow, "a", at(16))() as session:
        objects(session, *DEPLOYMENTS).create(make_deployment("late"))
    assert deployment_names(uow) == {"by-a"}


def test_an_expired_lease_fences_even_before_anyone_takes_it(uow: UnitOfWork) -> None:
    with uow() as session:
        assert LeaseRepository(session).try_acquire("a", at(0), 15)
    with pytest.raises(LeaseLost), fenced(uow, "a", at(15))() as session:
        objects(session, *DEPLOYMENTS).create(make_deployment("after-expiry"))
    assert deployment_names(uow) == set()


def test_a_read_only_unit_of_work_skips_the_fence(uow: UnitOfWork, engine: Engine) -> None:
    # Nobody holds the lease: a write would be refused.
    with count_statements(engine) as log, fenced(uow, "a", at(0))() as session:
        objects(session, *DEPLOYMENTS).list("default")
    assert not any("leases" in statement for statement in log.statements), log.statements


def test_a_core_statement_counts_as_a_write(uow: UnitOfWork) -> None:
    with pytest.raises(LeaseLost), fenced(uow, "a", at(0))() as session:
        claims.mark_dirty(session, ResourceTemplateRow, [1])


@pytest.fixture
def postgres_uow(postgres_server_url: str) -> Iterator[UnitOfWork]:
    """Postgres only (its row locks and session settings are what these tests are about)."""
    _reset_postgres(postgres_server_url)
    engine = make_engine(postgres_server_url)
    metadata.create_all(engine)
    try:
        yield UnitOfWork.for_engine(engine, SecretBox(generate_key()))
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_takeover_waits_for_the_fenced_transaction_to_end(postgres_uow: UnitOfWork) -> None:
    """Postgres: the fence share-locks the lease row, so the successor's UPDATE waits for the old
    leader's transaction; once it commits, the takeover goes through and a's next write is refused."""
    uow = postgres_uow
    with uow() as session:
        assert LeaseRepository(session).try_acquire("a", at(0), 15)
    took_over = threading.Event()

    def successor() -> None:
        with uow() as session:
            took_over.set() if LeaseRepository(session).try_acquire("b", at(30), 15) else None

    with fenced(uow, "a", at(14))() as session:
        objects(session, *DEPLOYMENTS).create(make_deployment("last-write"))
        session.flush()
        LeaseRepository(session).assert_leader("a", at(14))  # the lock is held from here to the commit
        waiting = threading.Thread(target=successor)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive() and not took_over.is_set()
    waiting.join(10)
    assert took_over.is_set()
    with pytest.raises(LeaseLost), fenced(uow, "a", at(31))() as session:
        objects(session, *DEPLOYMENTS).create(make_deployment("refused"))
    assert deployment_names(uow) == {"last-write"}


def two_claimed_by_me(uow: UnitOfWork) -> list[claims.Claim]:
    """Deployments d1 and d2, both claimed by "me" at 0 s for 15 s."""
    with uow() as session:
        repo = objects(session, *DEPLOYMENTS)
        for name in ("d1", "d2"):
            repo.create(make_deployment(name))
    with uow() as session:
        return claims.claim(session, ResourceTemplateRow, "me", 10, at(0), 15)


def test_claims_are_renewed_while_held_and_forgotten_after_the_pass(uow: UnitOfWork) -> None:
    taken = two_claimed_by_me(uow)
    assert len(taken) == 2
    with uow() as session:
        claims.release(session, ResourceTemplateRow, taken[:1], "me", done=True)
    with uow() as session:
        assert claims.renew(session, "me", at(10), 15) == 1  # d2 is still being worked on
        assert claims.renew(session, "someone-else", at(10), 15) == 0
    assert claimed_until(uow) == {taken[1].id: at(25)}
    claims.forget_held("me")
    with uow() as session:
        assert claims.renew(session, "me", at(20), 15) == 0  # the pass ended: the claim runs out
    assert claimed_until(uow) == {taken[1].id: at(25)}


def test_a_claim_released_on_another_thread_is_no_longer_renewed(uow: UnitOfWork) -> None:
    """The scheduler releases a batch's claims on its write thread: the pass's holdings must drop them,
    or the pass would go on renewing a row that another process may claim meanwhile."""
    taken = two_claimed_by_me(uow)
    assert claims.HOLDINGS.of("me") == {ResourceTemplateRow: sorted(c.id for c in taken)}

    def release_first() -> None:
        with uow() as session:
            claims.release(session, ResourceTemplateRow, taken[:1], "me", done=True)

    worker = threading.Thread(target=release_first)
    worker.start()
    worker.join(10)
    try:
        assert claims.HOLDINGS.of("me") == {ResourceTemplateRow: [taken[1].id]}
    finally:
        claims.forget_held("me")


@pytest.mark.postgres
def test_renewal_skips_a_claimed_row_another_transaction_holds_instead_of_waiting(
    postgres_uow: UnitOfWork,
) -> None:
    """A pass writing its batch holds its rows locked; the renewal must not wait for them (the two locked
    the same rows in different orders and deadlocked): it renews the others and comes back at once."""
    uow = postgres_uow
    taken = two_claimed_by_me(uow)
    t = table_of(ResourceTemplateRow)
    try:
        with uow() as writing:  # the pass: d2's row locked until this transaction ends
            writing.execute(select(t.c.id).where(t.c.id == taken[1].id).with_for_update())
            renewed: list[int] = []
            renewal = threading.Thread(target=_renew_in_own_transaction, args=(uow, renewed))
            renewal.start()
            renewal.join(10)
            assert not renewal.is_alive(), "the renewal waited for the row the pass holds"
        assert renewed == [1]  # d1 only
        assert claimed_until(uow) == {taken[0].id: at(25), taken[1].id: at(15)}
    finally:
        claims.forget_held("me")


def _renew_in_own_transaction(uow: UnitOfWork, renewed: list[int]) -> None:
    with uow() as session:
        renewed.append(claims.renew(session, "me", at(10), 15))


def test_a_new_leader_drops_the_claims_of_the_old_one(uow: UnitOfWork) -> None:
    with uow() as session:
        objects(session, *DEPLOYMENTS).create(make_deployment("d1"))
    with uow() as session:
        assert len(claims.claim(session, ResourceTemplateRow, "old", 10, at(0), 15)) == 1
    with uow() as session:
        assert claims.void_others(session, "new") == 1
    with uow() as session:
        assert [c.name for c in claims.claim(session, ResourceTemplateRow, "new", 10, at(1), 15)] == ["d1"]
    claims.forget_held("old")
    claims.forget_held("new")


def claimed_until(uow: UnitOfWork) -> dict[int, datetime]:
    t = table_of(ResourceTemplateRow)
    with uow() as session:
        rows = session.execute(select(t.c.id, t.c.claimed_until).where(t.c.claimed_by.is_not(None))).all()
    return {row.id: row.claimed_until for row in rows}


@pytest.mark.postgres
def test_postgres_sessions_carry_the_timeouts(postgres_server_url: str) -> None:
    engine = make_engine(postgres_server_url, Timeouts(statement_seconds=0.3, lock_seconds=2))
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SHOW statement_timeout")).scalar() == "300ms"
            assert connection.execute(text("SHOW lock_timeout")).scalar() == "2s"
            with pytest.raises(OperationalError, match="statement timeout"):
                connection.execute(text("SELECT pg_sleep(2)"))
    finally:
        engine.dispose()
    defaults = make_engine(postgres_server_url)
    try:
        with defaults.connect() as connection:
            assert connection.execute(text("SHOW statement_timeout")).scalar() == "1min"
    finally:
        defaults.dispose()
