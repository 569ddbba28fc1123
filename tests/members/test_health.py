"""Ready debouncing: Karmada's TestThresholdAdjustedReadyCondition cases (KV-089..093) as a table."""

from __future__ import annotations

import pytest

from federation.members.health import (
    MESSAGE_NOT_REACHABLE,
    MESSAGE_NOT_READY,
    REASON_NOT_REACHABLE,
    REASON_NOT_READY,
    REASON_READY,
    CacheEntry,
    ReadyCondition,
    ReadyDebouncer,
    observed_ready,
    threshold_adjusted,
)

NOW = 1_000.0


def _condition(status: str) -> ReadyCondition:
    return ReadyCondition(status, REASON_READY if status == "True" else REASON_NOT_READY, "")


# (id, cached (status, started seconds ago) or None, published status or None, observed, expected published)
CASES = [
    ("KV-089 not ready, failure threshold not reached", ("False", 15), "True", "False", "True"),
    ("KV-090 not ready, failure threshold reached", ("False", 30), "True", "False", "False"),
    ("KV-091 recovers, success threshold not reached", ("True", 15), "False", "True", "False"),
    ("KV-092 true to false restarts the timer", ("True", 600), "True", "False", "True"),
    ("KV-093 just joined not ready", None, None, "False", "False"),
]


@pytest.mark.parametrize(
    ("case", "cached", "published", "observed", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_threshold_adjusted_ready(
    case: str, cached: tuple[str, float] | None, published: str | None, observed: str, expected: str
) -> None:
    entry = CacheEntry(cached[0], NOW - cached[1]) if cached else None
    result, _ = threshold_adjusted(
        entry, _condition(published) if published else None, _condition(observed), NOW, 30.0, 30.0
    )
    assert result.status == expected


def test_timer_restart_records_the_new_status() -> None:
    _, entry = threshold_adjusted(CacheEntry("True", NOW - 600), _condition("True"), _condition("False"), NOW)
    assert entry == CacheEntry("False", NOW)


def test_false_to_unknown_is_not_debounced() -> None:
    result, _ = threshold_adjusted(CacheEntry("False", NOW), _condition("False"), _condition("Unknown"), NOW)
    assert result.status == "Unknown"


def test_debouncer_publishes_failure_after_threshold() -> None:
    debouncer = ReadyDebouncer(failure_threshold=30, success_threshold=10)
    ready, down = observed_ready(True, True), observed_ready(False, False)
    published = debouncer.adjust("m1", None, ready, now=0)
    assert published == ready
    for now in (5, 20, 34):
        published = debouncer.adjust("m1", published, down, now=now)
        assert published.status == "True"
    published = debouncer.adjust("m1", published, down, now=35)
    assert published == down
    assert debouncer.adjust("m1", published, ready, now=40) == down
    assert debouncer.adjust("m1", published, ready, now=50) == ready


@pytest.mark.parametrize(
    ("online", "healthy", "status", "reason", "message"),
    [
        (False, False, "False", REASON_NOT_REACHABLE, MESSAGE_NOT_REACHABLE),
        (True, False, "False", REASON_NOT_READY, MESSAGE_NOT_READY),
        (True, True, "True", REASON_READY, "cluster is healthy and ready to accept workloads"),
    ],
)
def test_observed_ready(online: bool, healthy: bool, status: str, reason: str, message: str) -> None:
    assert observed_ready(online, healthy) == ReadyCondition(status, reason, message)
