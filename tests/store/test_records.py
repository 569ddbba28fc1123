"""Events (count dedup) and scheduling decisions (append-only history)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from federation.store import Decision, DecisionRepository, EventRepository, InvolvedObject

from .support import T0

NGINX = InvolvedObject(kind="ResourceBinding", name="nginx", namespace="default", uid="u1")


def test_identical_events_are_counted(session: Session) -> None:
    events = EventRepository(session)
    first = events.record(NGINX, "Normal", "ScheduleBindingSucceed", "ok", now=T0)
    again = events.record(NGINX, "Normal", "ScheduleBindingSucceed", "ok", now=T0 + timedelta(seconds=5))
    other = events.record(NGINX, "Warning", "ScheduleBindingFailed", "no fit", now=T0 + timedelta(seconds=9))
    assert (first.count, again.count, other.count) == (1, 2, 1)
    assert again.first_timestamp == T0 and again.last_timestamp == T0 + timedelta(seconds=5)
    listed = events.for_object("ResourceBinding", "default", "nginx")
    assert [(e.reason, e.count) for e in listed] == [
        ("ScheduleBindingSucceed", 2),
        ("ScheduleBindingFailed", 1),
    ]
    assert [e.reason for e in events.recent(1)] == ["ScheduleBindingFailed"]
    assert events.prune(T0 + timedelta(seconds=6)) == 1


def test_event_type_is_checked(session: Session) -> None:
    with pytest.raises(ValueError, match="Normal or Warning"):
        EventRepository(session).record(NGINX, "Error", "X", "y", now=T0)


def decision(minute: int, result: str = "Success", uid: str = "u1") -> Decision:
    return Decision(
        binding_uid=uid,
        binding_kind="ResourceBinding",
        binding_namespace="default",
        binding_name="nginx" if uid == "u1" else "other",
        result=result,
        created_at=T0 + timedelta(minutes=minute),
        clusters=[{"name": "m1", "replicas": 2}],
        explanation={"filters": {"m2": "TaintToleration"}},
        binding_generation=minute,
    )


def test_decision_history(session: Session) -> None:
    decisions = DecisionRepository(session)
    for minute, result in [(0, "Success"), (1, "NoClusterFit"), (2, "Success")]:
        decisions.append(decision(minute, result))
    decisions.append(decision(3, uid="u2"))
    latest = decisions.latest("u1")
    assert latest is not None
    assert (latest.created_at, latest.binding_generation) == (T0 + timedelta(minutes=2), 2)
    assert latest.explanation == {"filters": {"m2": "TaintToleration"}}
    assert [d.result for d in decisions.history(binding_uid="u1")] == ["Success", "NoClusterFit", "Success"]
    assert [d.binding_uid for d in decisions.history(result="Success", limit=2)] == ["u2", "u1"]
    assert len(decisions.history(since=T0 + timedelta(minutes=1), namespace="default", name="nginx")) == 2
    assert decisions.latest("nope") is None
