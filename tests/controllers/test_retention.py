"""Retention: expired events and decisions go, then the oldest beyond the count, in batches."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from federation.controllers import retention as retention_module
from federation.controllers.retention import decision_retention, event_retention
from federation.controllers.runtime import FakeClock
from federation.settings import DecisionSettings, EventSettings
from federation.store.db import UnitOfWork, make_engine
from federation.store.decisions import Decision, DecisionRepository
from federation.store.events import EventEntry, EventQuery, EventRepository, InvolvedObject
from federation.store.tables import metadata

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def uow(database_url: str) -> Iterator[UnitOfWork]:
    engine = make_engine(database_url)
    metadata.create_all(engine)
    yield UnitOfWork.for_engine(engine)
    engine.dispose()


def record(uow: UnitOfWork, count: int, at: datetime, prefix: str) -> None:
    entries = [
        EventEntry(InvolvedObject("Work", f"{prefix}{i}", "ns"), "Warning", "SyncFailed", "x")
        for i in range(count)
    ]
    with uow() as session:
        EventRepository(session).record_many(entries, now=at)


def names(uow: UnitOfWork) -> list[str]:
    with uow() as session:
        found, _ = EventRepository(session).list(EventQuery(limit=1000))
    return sorted(e.involved.name for e in found)


def test_expired_then_surplus_events_are_deleted(uow: UnitOfWork) -> None:
    record(uow, 3, T0, "old")
    record(uow, 4, T0 + timedelta(minutes=50), "new")
    clock = FakeClock(T0 + timedelta(minutes=70))
    settings = EventSettings(ttl_seconds=3600, max_count=2, prune_batch_size=2)
    retention = event_retention(uow, clock, settings)
    assert retention.interval_seconds == settings.prune_interval_seconds
    outcome = retention.reconcile()
    assert outcome.processed == 5 and outcome.wrote == frozenset()  # 3 expired, 2 beyond the count
    assert len(names(uow)) == 2 and all(n.startswith("new") for n in names(uow))
    assert retention.reconcile().processed == 0


def test_a_backlog_is_left_to_the_next_pass(uow: UnitOfWork, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retention_module, "MAX_BATCHES", 2)
    record(uow, 7, T0, "old")
    retention = event_retention(uow, FakeClock(T0 + timedelta(days=1)), EventSettings(prune_batch_size=2))
    assert retention.reconcile().processed == 4  # two batches of two, then the pass ends
    assert retention.reconcile().processed == 3
    assert names(uow) == []


def decide(uow: UnitOfWork, count: int, at: datetime, prefix: str) -> None:
    decisions = [
        Decision(f"uid-{prefix}{i}", "ResourceBinding", "ns", f"{prefix}{i}", "Success", created_at=at)
        for i in range(count)
    ]
    with uow() as session:
        DecisionRepository(session).append_many(decisions)


def decided(uow: UnitOfWork) -> list[str]:
    with uow() as session:
        found = DecisionRepository(session).history(limit=1000)
    return sorted(d.binding_name for d in found)


def test_expired_then_surplus_decisions_are_deleted(uow: UnitOfWork) -> None:
    decide(uow, 3, T0, "old")
    decide(uow, 4, T0 + timedelta(days=6), "new")
    settings = DecisionSettings(max_count=3, prune_batch_size=2)
    retention = decision_retention(uow, FakeClock(T0 + timedelta(days=7, hours=1)), settings)
    assert retention.reconcile().processed == 4  # 3 older than a week, then 1 beyond the count
    assert len(decided(uow)) == 3 and all(n.startswith("new") for n in decided(uow))
    assert retention.reconcile().processed == 0
