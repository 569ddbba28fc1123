"""Reading events (namespaces, comparisons, keyset pages) and retention in bounded batches, on both backends."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from federation.store.events import EventEntry, EventQuery, EventRepository, InvolvedObject

from .support import T0

WEB = InvolvedObject("ResourceBinding", "web", "shop", "u1")
API = InvolvedObject("ResourceBinding", "api", "default", "u2")
MEMBER = InvolvedObject("Cluster", "member1", "", "u3")


def seed(session: Session) -> EventRepository:
    events = EventRepository(session)
    entries = [
        EventEntry(WEB, "Normal", "ScheduleBindingSucceed", "placed"),
        EventEntry(API, "Warning", "ScheduleBindingFailed", "no fit"),
        EventEntry(MEMBER, "Warning", "ClusterNotReady", "down"),
    ]
    events.record_many(entries, now=T0, source="scheduler")
    events.record_many([entries[1]], now=T0 + timedelta(seconds=30), source="scheduler")  # a repeat
    session.flush()
    return events


def reasons(events: EventRepository, query: EventQuery) -> list[str]:
    found, _ = events.list(query)
    return [e.reason for e in found]


def test_namespaces_and_comparisons(session: Session) -> None:
    events = seed(session)
    assert reasons(events, EventQuery()) == [
        "ScheduleBindingSucceed",
        "ScheduleBindingFailed",
        "ClusterNotReady",
    ]
    # Cluster-scoped objects' events live in "default", as kube-apiserver records them.
    assert reasons(events, EventQuery("default")) == ["ScheduleBindingFailed", "ClusterNotReady"]
    assert reasons(events, EventQuery("shop")) == ["ScheduleBindingSucceed"]
    by_object = EventQuery(
        None, (("name", True, "member1"), ("namespace", True, ""), ("kind", True, "Cluster"))
    )
    assert reasons(events, by_object) == ["ClusterNotReady"]
    assert reasons(events, EventQuery(None, (("type", False, "Warning"),))) == ["ScheduleBindingSucceed"]
    [repeat], _ = events.list(EventQuery(None, (("uid", True, "u2"),)))
    assert (repeat.count, repeat.first_timestamp, repeat.last_timestamp) == (
        2,
        T0,
        T0 + timedelta(seconds=30),
    )
    assert events.get(repeat.id) == repeat and events.get(repeat.id + 100) is None


def test_pages_by_id(session: Session) -> None:
    events = seed(session)
    first, after = events.list(EventQuery(limit=2))
    assert len(first) == 2 and after == first[-1].id
    rest, done = events.list(EventQuery(limit=2, after_id=after))
    assert [e.reason for e in rest] == ["ClusterNotReady"] and done is None


def test_prune_and_trim_delete_in_batches(session: Session) -> None:
    events = EventRepository(session)
    for minute in range(5):
        entry = EventEntry(InvolvedObject("Work", f"w{minute}", "ns"), "Warning", "SyncFailed", "x")
        events.record_many([entry], now=T0 + timedelta(minutes=minute))
    session.flush()
    assert events.prune(T0 + timedelta(minutes=3), batch=2) == 2  # w0, w1 (oldest first)
    assert events.prune(T0 + timedelta(minutes=3), batch=2) == 1  # w2
    assert events.prune(T0 + timedelta(minutes=3), batch=2) == 0
    assert events.trim(keep=1, batch=5) == 1  # w3 goes, the most recently seen stays
    assert events.trim(keep=1) == 0
    [left], _ = events.list(EventQuery())
    assert left.involved.name == "w4"
