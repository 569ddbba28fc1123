"""Leases: cluster heartbeats and leader election with explicit time (no sleeps)."""

from __future__ import annotations

from datetime import datetime, timedelta

from federation.store import LeaseRepository, UnitOfWork, objects

from .factories import make_cluster
from .support import T0


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_leader_takeover_only_after_expiry(uow: UnitOfWork) -> None:
    with uow() as session:
        assert LeaseRepository(session).try_acquire("a", at(0), 40)
    with uow() as session:
        leases = LeaseRepository(session)
        assert not leases.try_acquire("b", at(10), 40)
        assert leases.try_acquire("a", at(20), 40)  # renewal: expires at 60 now
        assert not leases.try_acquire("b", at(59), 40)
        assert leases.leader(at(59)) == "a"
    with uow() as session:
        leases = LeaseRepository(session)
        assert leases.leader(at(60)) is None
        assert leases.try_acquire("b", at(60), 40)
        assert not leases.try_acquire("a", at(61), 40)
        lease = leases.get("leader", "controllers")
    assert lease is not None
    assert (lease.holder, lease.acquired_at, lease.expires_at, lease.transitions) == ("b", at(60), at(100), 2)


def test_release_lets_a_successor_in_at_once(uow: UnitOfWork) -> None:
    with uow() as session:
        leases = LeaseRepository(session)
        assert leases.try_acquire("a", at(0), 40)
        assert not leases.release("b", at(1))  # not the holder
        assert leases.release("a", at(1))
        assert leases.try_acquire("b", at(2), 40)


def test_leases_by_name_are_independent(uow: UnitOfWork) -> None:
    with uow() as session:
        leases = LeaseRepository(session)
        assert leases.try_acquire("a", at(0), 40, name="scheduler")
        assert leases.try_acquire("b", at(0), 40, name="status")
        assert leases.leader(at(1), name="scheduler") == "a"


def test_cluster_lease_renewal(uow: UnitOfWork) -> None:
    with uow() as session:
        leases = LeaseRepository(session)
        first = leases.renew_cluster_lease("member1", "agent-1", at(0), 40)
        second = leases.renew_cluster_lease("member1", "agent-1", at(10), 40)
        leases.renew_cluster_lease("member2", "agent-2", at(5), 40)
    assert first.renew_time == at(0) and first.acquired_at == at(0)
    assert second.renew_time == at(10) and second.acquired_at == at(0) and second.expires_at == at(50)
    assert not second.expired(at(49)) and second.expired(at(50))
    with uow() as session:
        names = [lease.name for lease in LeaseRepository(session).cluster_leases()]
    assert names == ["member1", "member2"]


def test_a_cluster_lease_taken_by_another_agent_counts_a_transition(uow: UnitOfWork) -> None:
    """The renewal's statement is built once: its holder and times are bound per call, so the second agent's
    renewal is a takeover (acquired now, one transition more) and its next one a plain renewal."""
    with uow() as session:
        leases = LeaseRepository(session)
        first = leases.renew_cluster_lease("member1", "agent-1", at(0), 40)
        taken = leases.renew_cluster_lease("member1", "agent-2", at(10), 40)
        kept = leases.renew_cluster_lease("member1", "agent-2", at(20), 30)
    assert (first.holder, first.transitions) == ("agent-1", 1)  # from no holder to agent-1
    assert (taken.holder, taken.acquired_at, taken.transitions) == ("agent-2", at(10), 2)
    assert (kept.holder, kept.acquired_at, kept.transitions) == ("agent-2", at(10), 2)
    assert (kept.renew_time, kept.duration_seconds, kept.expires_at) == (at(20), 30, at(50))


def test_batched_cluster_lease_renewal(uow: UnitOfWork) -> None:
    """The push-mode status pass renews every healthy member's lease in two statements."""
    with uow() as session:
        leases = LeaseRepository(session)
        leases.renew_cluster_leases(["member1", "member2"], at(0), 40)
        leases.renew_cluster_leases(["member1", "member3"], at(10), 40)
    with uow() as session:
        found = {lease.name: lease for lease in LeaseRepository(session).cluster_leases()}
    assert set(found) == {"member1", "member2", "member3"}
    assert found["member1"].renew_time == at(10) and found["member1"].acquired_at == at(0)
    assert found["member1"].holder == "member1" and found["member1"].expires_at == at(50)
    assert found["member2"].renew_time == at(0) and found["member2"].expired(at(40))
    assert found["member3"].acquired_at == at(10)


def test_a_registered_only_renewal_refuses_an_unknown_cluster_and_writes_nothing(uow: UnitOfWork) -> None:
    with uow() as session:
        objects(session, "cluster.karmada.io/v1alpha1", "Cluster").create(make_cluster("edge"))
    with uow() as session:
        leases = LeaseRepository(session)
        assert leases.renew_registered_cluster_lease("gone", "gone", at(0), 40) is None
        first = leases.renew_registered_cluster_lease("edge", "agent", at(0), 40)
        again = leases.renew_registered_cluster_lease("edge", "agent", at(10), 40)
    assert first is not None and again is not None
    assert (again.holder, again.acquired_at, again.renew_time, again.expires_at) == (
        "agent",
        at(0),
        at(10),
        at(50),
    )
    with uow() as session:
        assert [lease.name for lease in LeaseRepository(session).cluster_leases()] == ["edge"]
