"""Reading the change log: polls, history, start positions, pruning, and when a gap is final."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from federation.store import UnitOfWork, changefeed, make_engine, objects, session_factory
from federation.store.changefeed import ChangeEntry, Poll, Resolver, Scope
from federation.store.crypto import SecretBox, generate_key
from federation.store.tables import ChangeLogRow, metadata, table_of
from tests.conftest import _reset_postgres

from .factories import make_cluster, make_configmap, make_deployment, make_propagation_policy
from .support import T0
from .test_secret_sealing import TOKEN, make_secret

DEPLOYMENTS = Scope("apps/v1", "Deployment", match_api_version=True)


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def entry(revision: int) -> ChangeEntry:
    return ChangeEntry(revision, "ADDED", "v1", "ConfigMap", "default", f"c{revision}", {})


def test_poll_reads_after_a_revision_in_order_with_secret_data_in_the_clear(session: Session) -> None:
    first = objects(session, "v1", "ConfigMap").create(make_configmap())
    secret = objects(session, "v1", "Secret").create(make_secret())
    polled = changefeed.poll(session, rv(first) - 1, 10)
    assert [e.revision for e in polled.entries] == [rv(first), rv(secret)]
    assert polled.entries[1].object == secret and polled.entries[1].object["stringData"] == {"token": TOKEN}
    assert [e.revision for e in changefeed.poll(session, rv(first), 10).entries] == [rv(secret)]
    assert changefeed.poll(session, rv(first) - 1, 1, with_objects=False).entries[0].object == {}
    # The snapshot bounds exist exactly where gaps can be in flight.
    assert (polled.running is None) == (session.get_bind().dialect.name == "sqlite")


def test_history_follows_one_kind_namespace_and_name(session: Session) -> None:
    deployments = objects(session, "apps/v1", "Deployment")
    a = deployments.create(make_deployment("a"))
    objects(session, "v1", "ConfigMap").create(make_configmap("a"))
    b = deployments.create(make_deployment("b", namespace="other"))
    a2 = deployments.replace(make_deployment("a", spec={"replicas": 7}))
    policy = objects(session, "policy.karmada.io/v1alpha1", "PropagationPolicy").create(
        make_propagation_policy()
    )
    top = rv(policy)

    def names(scope: Scope, after: int = 0, upto: int = top) -> list[tuple[str, int]]:
        return [(e.name, e.revision) for e in changefeed.history(session, after, upto, scope, 100)]

    assert names(DEPLOYMENTS) == [("a", rv(a)), ("b", rv(b)), ("a", rv(a2))]
    assert names(Scope("apps/v1", "Deployment", True, namespace="other")) == [("b", rv(b))]
    assert names(Scope("apps/v1", "Deployment", True, name="a"), after=rv(a)) == [("a", rv(a2))]
    assert names(DEPLOYMENTS, upto=rv(b)) == [("a", rv(a)), ("b", rv(b))]
    # Karmada kinds match by group: every served version is a view of the same objects.
    v1 = Scope("policy.karmada.io/v1", "PropagationPolicy", match_api_version=False)
    assert names(v1) == [(policy["metadata"]["name"], top)]


def test_start_position_and_oldest_watchable(session: Session) -> None:
    assert changefeed.start_position(session) == 0 == changefeed.oldest_watchable(session)
    written = [objects(session, "v1", "ConfigMap").create(make_configmap(f"c{i}")) for i in range(4)]
    assert changefeed.start_position(session) == rv(written[-1])
    assert changefeed.oldest_watchable(session) == rv(written[0]) - 1
    log = table_of(ChangeLogRow)
    session.execute(log.delete().where(log.c.revision == rv(written[1])))  # a write that rolled back
    assert changefeed.start_position(session) == rv(written[0])  # complete up to the first gap only


def test_prune_deletes_a_prefix_by_age_in_batches_and_keeps_the_newest(session: Session) -> None:
    written = [objects(session, "v1", "ConfigMap").create(make_configmap(f"c{i}")) for i in range(6)]
    log = table_of(ChangeLogRow)
    ages = [0, 10, 5, 20, 30, 40]  # minutes after T0; the third row is older than the second
    for obj, minutes in zip(written, ages, strict=True):
        at = T0 + timedelta(minutes=minutes)
        session.execute(update(log).where(log.c.revision == rv(obj)).values(created_at=at))
    # Logged before T0+15m: rows 0-2. A prefix goes: 0, 1, 2 (never row 1 alone, never a gap inside).
    assert changefeed.prune(session, T0 + timedelta(minutes=15), limit=2) == 2
    assert changefeed.prune(session, T0 + timedelta(minutes=15), limit=2) == 1
    assert changefeed.prune(session, T0 + timedelta(minutes=15), limit=2) == 0
    assert changefeed.oldest_watchable(session) == rv(written[3]) - 1
    assert changefeed.prune(session, T0 + timedelta(days=1), limit=100) == 2  # the newest row stays
    assert list(session.scalars(select(log.c.revision))) == [rv(written[-1])]
    assert changefeed.start_position(session) == rv(written[-1])


# -- Resolver: pure ------------------------------------------------------------------------------------------


def test_without_snapshots_a_gap_is_final_at_once() -> None:
    """SQLite: one writer at a time, so a revision missing below a visible one never comes."""
    resolver = Resolver(resolved=3)
    assert [e.revision for e in resolver.advance(Poll((entry(4), entry(7), entry(8))))] == [4, 7, 8]
    assert resolver.resolved == 8


def test_a_gap_waits_until_the_writers_that_could_fill_it_have_ended() -> None:
    resolver = Resolver(resolved=3)
    seen = Poll((entry(4), entry(6), entry(7)), running=frozenset({100, 101, 102}), writers=frozenset({101}))
    assert [e.revision for e in resolver.advance(seen)] == [4]
    # Writer 101 may still commit revision 5: nothing past the gap moves meanwhile.
    assert resolver.advance(Poll((entry(6), entry(7), entry(9)), running=frozenset({101, 103}))) == []
    assert resolver.resolved == 4
    # It ended and 5 came: in order. A transaction still running elsewhere (100) holds nothing up.
    polled = Poll((entry(5), entry(6), entry(7)), running=frozenset({100}))
    assert [e.revision for e in resolver.advance(polled)] == [5, 6, 7]


def test_a_gap_nobody_fills_is_passed_once_its_writers_ended() -> None:
    resolver = Resolver(resolved=3)
    resolver.advance(Poll((entry(6),), running=frozenset({7}), writers=frozenset({7})))
    # 4 and 5 rolled back; the gap below 6 is final, but 8 came later than the wait: a new one starts.
    polled = Poll((entry(6), entry(8)), running=frozenset({9}), writers=frozenset({9}))
    assert [e.revision for e in resolver.advance(polled)] == [6]
    assert resolver.advance(Poll((entry(8),), running=frozenset({9}), writers=frozenset({9}))) == []
    assert [e.revision for e in resolver.advance(Poll((entry(8),), running=frozenset()))] == [8]
    assert resolver.resolved == 8


# -- Postgres: a writer in flight holds back what committed after it ----------------------------------------


@pytest.fixture
def pg_engine(postgres_server_url: str) -> Iterator[Engine]:
    _reset_postgres(postgres_server_url)
    engine = make_engine(postgres_server_url)
    metadata.create_all(engine)
    try:
        yield engine
    finally:
        engine.dispose()


def poll(uow: UnitOfWork, resolver: Resolver) -> list[int]:
    with uow() as session:
        return [e.revision for e in resolver.advance(changefeed.poll(session, resolver.resolved, 100))]


@pytest.mark.postgres
@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_a_revision_drawn_before_a_commit_is_delivered_first_or_given_up(
    pg_engine: Engine, outcome: str
) -> None:
    box = SecretBox(generate_key())
    uow = UnitOfWork.for_engine(pg_engine, box)
    with uow() as session:
        start = rv(objects(session, "v1", "ConfigMap").create(make_configmap("before")))
    resolver = Resolver(resolved=start)
    slow = session_factory(pg_engine, box)()
    try:
        held = rv(objects(slow, "cluster.karmada.io/v1alpha1", "Cluster").create(make_cluster("slow")))
        with uow() as session:
            fast = rv(objects(session, "v1", "ConfigMap").create(make_configmap("fast")))
        assert start < held < fast
        assert poll(uow, resolver) == []  # ``fast`` is visible, but ``held`` may still commit
        assert poll(uow, resolver) == []
        if outcome == "commit":
            slow.commit()
        else:
            slow.rollback()
    finally:
        slow.close()
    assert poll(uow, resolver) == ([held, fast] if outcome == "commit" else [fast])
