"""The pure parts of application failover: the unhealthy clock and the retry budget (table tests)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from federation.model import budget
from federation.model.budget import (
    MAX_RESCHEDULES_ANNOTATION,
    RESCHEDULE_COUNT_ANNOTATION,
    TRIED_CLUSTERS_ANNOTATION,
    HealthRecord,
    Tried,
)
from federation.model.validation import validate_object

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def play(*steps: tuple[float, str]) -> HealthRecord:
    """Observe each (seconds after T0, health) in order; the final record."""
    record: HealthRecord | None = None
    for seconds, health in steps:
        record = budget.observe(record, health, at(seconds))
    assert record is not None
    return record


# -- the unhealthy clock ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "now", "unhealthy_for"),
    [
        ([(0, "Unhealthy")], 120, 120),
        ([(0, "Unhealthy"), (100, "Unknown")], 5000, 100),  # Unknown pauses the clock
        ([(0, "Unhealthy"), (100, "Unknown"), (1000, "Unhealthy")], 1050, 150),  # and it resumes
        ([(0, "Unhealthy"), (100, "Unknown"), (200, "Unhealthy"), (250, "Unknown")], 900, 150),
        ([(0, "Unhealthy"), (100, "Healthy"), (200, "Unhealthy")], 260, 60),  # Healthy resets
        ([(0, "Unhealthy"), (100, "Unknown"), (150, "Healthy"), (200, "Unhealthy")], 210, 10),
        ([(0, "Healthy")], 500, 0),
        ([(0, "Unknown")], 500, 0),
        ([(0, "Unhealthy"), (0, "Unhealthy"), (50, "Unhealthy")], 80, 80),  # repeats change nothing
        ([(0, "Unhealthy"), (10, "Progressing")], 90, 10),  # anything else is Unknown
    ],
)
def test_unhealthy_time_accumulates_across_unknown_and_resets_on_healthy(
    steps: list[tuple[float, str]], now: float, unhealthy_for: float
) -> None:
    assert play(*steps).unhealthy_for(at(now)) == unhealthy_for


@pytest.mark.parametrize(
    ("steps", "now", "over", "ends"),
    [
        ([(0, "Unhealthy")], 299, False, 300),
        ([(0, "Unhealthy")], 300, True, 300),
        ([(0, "Unhealthy"), (200, "Unknown")], 10_000, False, None),  # Unknown is never evicted
        ([(0, "Unhealthy"), (200, "Unknown"), (500, "Unhealthy")], 599, False, 600),
        ([(0, "Unhealthy"), (200, "Unknown"), (500, "Unhealthy")], 600, True, 600),
        ([(0, "Healthy")], 10_000, False, None),
    ],
)
def test_toleration(steps: list[tuple[float, str]], now: float, over: bool, ends: float | None) -> None:
    record = play(*steps)
    assert record.over_toleration(300, at(now)) is over
    assert record.toleration_ends(300, at(now)) == (None if ends is None else max(at(ends), at(now)))


def test_a_zero_toleration_evicts_at_first_sight() -> None:
    assert play((0, "Unhealthy")).over_toleration(0, at(0))


def test_an_unchanged_observation_returns_the_same_record() -> None:
    record = play((0, "Unhealthy"))
    assert budget.observe(record, "Unhealthy", at(50)) is record


@pytest.mark.parametrize(
    ("steps", "healthy_before_failure"),
    [
        ([(0, "Healthy"), (2000, "Unhealthy")], 2000),
        ([(0, "Unhealthy")], 0),
        ([(0, "Healthy"), (1000, "Unknown"), (5000, "Unhealthy")], 1000),  # Unknown is no healthy time
        ([(0, "Healthy"), (1000, "Unknown"), (5000, "Healthy"), (6000, "Unhealthy")], 2000),  # resumed
        ([(0, "Healthy"), (1000, "Unhealthy"), (1100, "Healthy"), (1400, "Unhealthy")], 300),  # new run
        (
            [(0, "Healthy"), (1000, "Unhealthy"), (1100, "Unknown"), (1200, "Healthy"), (1500, "Unhealthy")],
            300,
        ),
    ],
)
def test_the_healthy_run_before_a_failure(
    steps: list[tuple[float, str]], healthy_before_failure: float
) -> None:
    assert play(*steps).healthy_seconds_before_failure == healthy_before_failure


# -- reading the budget -----------------------------------------------------------------------------------


def annotated(kind: str = "Deployment", **values: str) -> dict[str, Any]:
    keys = {
        "limit": MAX_RESCHEDULES_ANNOTATION,
        "count": RESCHEDULE_COUNT_ANNOTATION,
        "tried": TRIED_CLUSTERS_ANNOTATION,
    }
    return {"kind": kind, "metadata": {"name": "web", "annotations": {keys[k]: v for k, v in values.items()}}}


@pytest.mark.parametrize(
    ("values", "behavior", "limit", "count", "tried", "problems"),
    [
        ({}, None, None, 0, (), 0),
        ({}, {"maxReschedules": 2}, 2, 0, (), 0),
        ({"limit": "5"}, {"maxReschedules": 2}, 5, 0, (), 0),  # the workload's own annotation wins
        ({"limit": "0"}, {"maxReschedules": 2}, 0, 0, (), 0),
        ({"limit": "many"}, {"maxReschedules": 2}, 2, 0, (), 1),  # unreadable: the policy's default
        ({"limit": "-1"}, None, None, 0, (), 1),
        ({"count": "3", "tried": '["m1","m2"]'}, None, None, 3, ("m1", "m2"), 0),
        ({"count": "x", "tried": "not json"}, None, None, 0, (), 2),
        ({"tried": '{"m1":["m1"]}'}, None, None, 0, (), 1),  # a map on a Deployment
        ({}, {"maxReschedules": -1}, None, 0, (), 0),  # admission refuses it; never trusted here
    ],
)
def test_read_budget(
    values: dict[str, str],
    behavior: dict[str, Any] | None,
    limit: int | None,
    count: int,
    tried: tuple[str, ...],
    problems: int,
) -> None:
    read = budget.read_budget(annotated(**values), behavior)
    assert (read.limit, read.count, read.tried.clusters(), len(read.problems)) == (
        limit,
        count,
        tried,
        problems,
    )


def test_a_statefulset_reads_a_map_per_share() -> None:
    read = budget.read_budget(annotated("StatefulSet", tried='{"m1":["m1","m3"],"m2":[]}'), None)
    assert read.tried == Tried(True, {"m1": ("m1", "m3"), "m2": ()})
    assert read.tried.clusters() == ("m1", "m3")
    assert budget.read_budget(annotated("StatefulSet", tried='["m1"]'), None).problems


@pytest.mark.parametrize(
    ("kind", "tried", "avoid"),
    [
        ("Deployment", '["m1","m2"]', {"m1", "m2"}),
        ("StatefulSet", '{"m1":["m1","m3"],"m2":["m2"],"m4":[]}', {"m1", "m2", "m3"}),
        ("Pod", '["m1"]', {"m1"}),
        ("Deployment", "garbage", set()),
        ("Deployment", None, set()),
    ],
)
def test_avoid_of(kind: str, tried: str | None, avoid: set[str]) -> None:
    values = {} if tried is None else {"tried": tried}
    assert budget.avoid_of(annotated(kind, **values)) == avoid
    assert budget.avoid_of(None) == frozenset()


# -- charging the budget ----------------------------------------------------------------------------------

FAILED_AT_ONCE = play((0, "Unhealthy"), (300, "Unhealthy"))


def failed_after_healthy(seconds: float) -> HealthRecord:
    return play((0, "Healthy"), (seconds, "Unhealthy"))


@pytest.mark.parametrize(
    ("values", "behavior", "allowed", "count", "tried"),
    [
        ({}, None, True, 1, '["m1"]'),  # the first reschedule: count 1, the list [m1]
        ({"limit": "3"}, None, True, 1, '["m1"]'),
        ({"limit": "3", "count": "2", "tried": '["m2","m3"]'}, None, True, 3, '["m2","m3","m1"]'),
        ({"limit": "3", "count": "3", "tried": '["m2","m3","m4"]'}, None, False, 3, '["m2","m3","m4"]'),
        ({"count": "1", "tried": '["m2"]'}, {"maxReschedules": 1}, False, 1, '["m2"]'),
        ({"limit": "0"}, None, False, 0, None),  # 0: application failover off for this workload
        ({"count": "9", "tried": '["m1"]'}, None, True, 10, '["m1"]'),  # no duplicates in the list
    ],
)
def test_charge(
    values: dict[str, str], behavior: dict[str, Any] | None, allowed: bool, count: int, tried: str | None
) -> None:
    read = budget.read_budget(annotated(**values), behavior)
    charged = budget.charge(read, "m1", ["m1", "m2"], FAILED_AT_ONCE, reset_after_seconds=1800)
    assert charged.allowed is allowed
    assert charged.after.annotations() == {
        RESCHEDULE_COUNT_ANNOTATION: str(count),
        TRIED_CLUSTERS_ANNOTATION: tried,
    }
    assert not charged.reset


@pytest.mark.parametrize(
    ("healthy_for", "allowed", "count", "tried", "reset"),
    [
        (1801, True, 1, '["m1"]', True),  # ran healthy long enough: the budget starts again
        (1800, False, 2, '["m2","m3"]', False),  # not longer than resetAfterSeconds
        (0, False, 2, '["m2","m3"]', False),
    ],
)
def test_a_long_healthy_run_before_the_failure_resets_the_budget(
    healthy_for: float, allowed: bool, count: int, tried: str, reset: bool
) -> None:
    read = budget.read_budget(annotated(limit="2", count="2", tried='["m2","m3"]'), None)
    charged = budget.charge(read, "m1", ["m1"], failed_after_healthy(healthy_for), reset_after_seconds=1800)
    assert (charged.allowed, charged.reset) == (allowed, reset)
    assert charged.after.annotations() == {
        RESCHEDULE_COUNT_ANNOTATION: str(count),
        TRIED_CLUSTERS_ANNOTATION: tried,
    }


def test_nothing_to_reset_is_no_reset() -> None:
    charged = budget.charge(
        budget.read_budget(annotated(), None), "m1", ["m1"], failed_after_healthy(5000), 1800
    )
    assert charged.allowed and not charged.reset


def test_exhausted_message_names_the_count_and_the_clusters() -> None:
    read = budget.read_budget(annotated(limit="2", count="2", tried='["m2","m3"]'), None)
    message = budget.charge(read, "m1", ["m1"], FAILED_AT_ONCE, 1800).message()
    assert "2 reschedule(s) of at most 2" in message and "tried: m2, m3" in message and "m1" in message


# -- StatefulSets: one list per share ---------------------------------------------------------------------


def statefulset(tried: dict[str, list[str]] | None = None, **values: str) -> budget.Budget:
    if tried is not None:
        values["tried"] = json.dumps(tried)
    return budget.read_budget(annotated("StatefulSet", **values), None)


@pytest.mark.parametrize(
    ("tried", "cluster", "targets", "after"),
    [
        # The first write names every share of the placement.
        (None, "m1", ["m1", "m2", "m3"], {"m1": ["m1"], "m2": [], "m3": []}),
        # A share that never moved fails: its own list.
        (
            {"m1": ["m1"], "m2": [], "m3": []},
            "m2",
            ["m2", "m3", "m4"],
            {"m1": ["m1"], "m2": ["m2"], "m3": []},
        ),
        # A cluster that is no key is where the moved share landed.
        ({"m1": ["m1"], "m2": []}, "m4", ["m2", "m4"], {"m1": ["m1", "m4"], "m2": []}),
        # No share moved: a share new since the map was written starts where it is.
        ({"m1": [], "m2": []}, "m5", ["m1", "m2", "m5"], {"m1": [], "m2": [], "m5": ["m5"]}),
    ],
)
def test_statefulset_keeps_one_tried_list_per_share(
    tried: dict[str, list[str]] | None, cluster: str, targets: list[str], after: dict[str, list[str]]
) -> None:
    charged = budget.charge(statefulset(tried), cluster, targets, FAILED_AT_ONCE, 1800)
    assert charged.allowed
    assert json.loads(charged.after.annotations()[TRIED_CLUSTERS_ANNOTATION] or "null") == after


def test_statefulset_reset_empties_only_the_failing_share() -> None:
    read = statefulset({"m1": ["m1", "m3"], "m2": ["m2"]}, count="3", limit="3")
    charged = budget.charge(read, "m4", ["m4", "m5"], failed_after_healthy(4000), 1800)
    # m4 is where a moved share landed: the first by name (m1) — its list restarts, m2's stays.
    assert charged.allowed and charged.reset and charged.share == "m1"
    assert json.loads(charged.after.annotations()[TRIED_CLUSTERS_ANNOTATION] or "") == {
        "m1": ["m4"],
        "m2": ["m2"],
    }


@pytest.mark.parametrize(
    ("tried", "cleared"),
    [
        (Tried(False, {"": ("m1", "m2")}), None),
        (Tried(True, {"m1": ("m1", "m3"), "m2": ()}), '{"m1":[],"m2":[]}'),  # the shares stay known
        (Tried(False, {}), None),
    ],
)
def test_cleared_when_the_avoid_list_had_to_be_ignored(tried: Tried, cleared: str | None) -> None:
    assert tried.cleared().encode() == cleared
    assert tried.cleared().clusters() == ()


@pytest.mark.parametrize(("kind", "exempt"), [("DaemonSet", True), ("Deployment", False), ("Pod", False)])
def test_daemonsets_are_exempt(kind: str, exempt: bool) -> None:
    assert budget.exempt(kind) is exempt


# -- admission: the policy's default budget -------------------------------------------------------------


def policy_with(max_reschedules: Any) -> dict[str, Any]:
    application = {"decisionConditions": {"tolerationSeconds": 60}, "maxReschedules": max_reschedules}
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {},
            "propagateDeps": True,
            "failover": {"application": application},
        },
    }


@pytest.mark.parametrize(
    ("value", "accepted"), [(0, True), (3, True), (-1, False), ("3", False), (2**31, False)]
)
def test_admission_takes_max_reschedules_on_the_policy(value: Any, accepted: bool) -> None:
    errors = validate_object(policy_with(value))
    assert (
        not errors if accepted else [e.field for e in errors] == ["spec.failover.application.maxReschedules"]
    )
