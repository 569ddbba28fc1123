"""Pure failover decisions: taint verdicts, GracefulEvictCluster, task assessment with the last-copy guard."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from federation.model.failover import (
    NOT_READY_TAINT_KEY,
    UNREACHABLE_TAINT_KEY,
    Eviction,
    assess_tasks,
    evict_cluster,
    purge_mode,
    taint_verdict,
    with_default_tolerations,
)
from federation.model.placement import Taint, Toleration

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def taint(key: str = NOT_READY_TAINT_KEY, effect: str = "NoExecute", ago: float | None = 0) -> Taint:
    added = None if ago is None else NOW - timedelta(seconds=ago)
    return Taint.model_validate({"key": key, "effect": effect, "timeAdded": added})


def toleration(key: str | None = NOT_READY_TAINT_KEY, seconds: int | None = None, **extra: Any) -> Toleration:
    body: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute", **extra}
    if seconds is not None:
        body["tolerationSeconds"] = seconds
    return Toleration.model_validate(body)


# (taints, tolerations) → (evict now, look again at seconds from now or None)
VERDICTS = {
    "no taints": ([], [], (False, None)),
    "NoSchedule only": ([taint(effect="NoSchedule")], [], (False, None)),
    "untolerated NoExecute": ([taint()], [], (True, 0)),
    "tolerated forever": ([taint()], [toleration()], (False, None)),
    "tolerated 300s, added now": ([taint()], [toleration(seconds=300)], (False, 300)),
    "tolerated 300s, added 200s ago": ([taint(ago=200)], [toleration(seconds=300)], (False, 100)),
    "tolerated 300s, added 300s ago": ([taint(ago=300)], [toleration(seconds=300)], (True, 0)),
    "tolerationSeconds 0": ([taint(ago=0)], [toleration(seconds=0)], (True, 0)),
    "negative seconds": ([taint(ago=0)], [toleration(seconds=-5)], (True, 0)),
    "earliest of two taints": (
        [taint(ago=10), taint(UNREACHABLE_TAINT_KEY, ago=250)],
        [toleration(None, seconds=300)],
        (False, 50),
    ),
    "one of two untolerated": ([taint(), taint("other")], [toleration(seconds=300)], (True, 0)),
    "no timeAdded never triggers": (
        [taint(ago=None)],
        [toleration(seconds=60)],
        (False, None),
    ),  # Karmada KV-085
}


@pytest.mark.parametrize(("taints", "tolerations", "expected"), VERDICTS.values(), ids=list(VERDICTS))
def test_taint_verdict(taints: list[Taint], tolerations: list[Toleration], expected: tuple) -> None:
    verdict = taint_verdict(taints, tolerations, NOW)
    at = None if verdict.at is None else (verdict.at - NOW).total_seconds()
    assert (verdict.evict, at if not verdict.evict else 0) == (expected[0], expected[1])


def test_default_tolerations_are_added_unless_the_placement_has_its_own() -> None:
    own = [{"key": NOT_READY_TAINT_KEY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]
    result = with_default_tolerations(own, 300, 200)
    assert result == [
        own[0],
        {"key": UNREACHABLE_TAINT_KEY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 200},
    ]
    assert len(with_default_tolerations([{"operator": "Exists"}], 300, 300)) == 1  # tolerates everything


def spec(*clusters: tuple[str, int], tasks: list[dict] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"replicas": sum(r for _, r in clusters)}
    body["clusters"] = [{"name": n, "replicas": r} for n, r in clusters]
    if tasks is not None:
        body["gracefulEvictionTasks"] = tasks
    return body


def test_evict_cluster_moves_the_share_into_a_task() -> None:
    original = spec(("member1", 1), ("member2", 2))
    evicted = evict_cluster(original, Eviction("member1", "TaintUntolerated", "TaintManager"), NOW)
    assert evicted["clusters"] == [{"name": "member2", "replicas": 2}]
    assert evicted["gracefulEvictionTasks"] == [
        {
            "fromCluster": "member1",
            "purgeMode": "Gracefully",
            "reason": "TaintUntolerated",
            "producer": "TaintManager",
            "clustersBeforeFailover": ["member1", "member2"],
            "creationTimestamp": "2026-01-01T12:00:00Z",
            "replicas": 1,
        }
    ]
    assert original["clusters"][0]["name"] == "member1"  # input untouched
    again = evict_cluster(evicted, Eviction("member1", "TaintUntolerated", "TaintManager"), NOW)
    assert again == evicted  # one task per cluster


@pytest.mark.parametrize(
    ("mode", "grace", "fields"),
    [
        ("Never", None, {"suppressDeletion": True}),
        ("Gracefully", 60, {"gracePeriodSeconds": 60}),
        ("Directly", 60, {}),
    ],
)
def test_purge_modes_shape_the_task(mode: str, grace: int | None, fields: dict[str, Any]) -> None:
    eviction = Eviction("member1", "ApplicationFailure", "x", purge_mode=mode, grace_period_seconds=grace)  # type: ignore[arg-type]
    [task] = evict_cluster(spec(("member1", 1)), eviction, NOW)["gracefulEvictionTasks"]
    assert {k: task[k] for k in ("suppressDeletion", "gracePeriodSeconds") if k in task} == fields
    assert task["purgeMode"] == mode


@pytest.mark.parametrize(
    ("given", "canonical"),
    [("", "Gracefully"), ("Graciously", "Gracefully"), ("Immediately", "Directly"), ("Never", "Never")],
)
def test_purge_mode_aliases(given: str, canonical: str) -> None:
    assert purge_mode(given) == canonical


def binding(
    targets: list[tuple[str, int]],
    tasks: list[dict[str, Any]],
    health: dict[str, str],
    scheduled: bool = True,
) -> dict[str, Any]:
    return {
        "metadata": {"generation": 3},
        "spec": spec(*targets, tasks=tasks),
        "status": {
            "schedulerObservedGeneration": 3 if scheduled else 2,
            "aggregatedStatus": [{"clusterName": c, "applied": True, "health": h} for c, h in health.items()],
        },
    }


def task(cluster: str = "member1", ago: float = 0, **extra: Any) -> dict[str, Any]:
    created = (NOW - timedelta(seconds=ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "fromCluster": cluster,
        "reason": "TaintUntolerated",
        "producer": "TaintManager",
        "creationTimestamp": created,
        "purgeMode": "Gracefully",
        **extra,
    }


def removed(assessment: Any) -> list[tuple[str, str]]:
    return [(t["fromCluster"], why) for t, why in assessment.removed]


def test_task_goes_when_every_target_is_healthy() -> None:
    result = assess_tasks(binding([("member2", 3)], [task()], {"member2": "Healthy"}), 600, NOW)
    assert removed(result) == [("member1", "Healthy")] and not result.kept


def test_task_waits_while_not_scheduled_at_the_current_generation() -> None:
    result = assess_tasks(
        binding([("member2", 3)], [task()], {"member2": "Healthy"}, scheduled=False), 600, NOW
    )
    assert result.kept and result.last_copy


def test_task_times_out_after_the_global_timeout_or_its_grace_period() -> None:
    unhealthy = {"member2": "Unhealthy", "member3": "Healthy"}
    targets = [("member2", 2), ("member3", 1)]
    waiting = assess_tasks(binding(targets, [task(ago=100)], unhealthy), 600, NOW)
    assert waiting.kept and waiting.next_at == NOW + timedelta(seconds=500)
    assert removed(assess_tasks(binding(targets, [task(ago=600)], unhealthy), 600, NOW)) == [
        ("member1", "Timeout")
    ]
    graced = task(ago=61, gracePeriodSeconds=60)
    assert removed(assess_tasks(binding(targets, [graced], unhealthy), 600, NOW)) == [("member1", "Timeout")]


def test_suppress_deletion_keeps_the_task_until_a_user_flips_it() -> None:
    kept = assess_tasks(
        binding([("member2", 3)], [task(ago=10_000, suppressDeletion=True)], {"member2": "Healthy"}), 600, NOW
    )
    assert kept.kept and kept.next_at is None
    flipped = assess_tasks(binding([("member2", 3)], [task(suppressDeletion=False)], {}), 600, NOW)
    assert removed(flipped) == [("member1", "Confirmed")]


@pytest.mark.parametrize(
    ("targets", "health"),
    [([], {}), ([("member2", 3)], {"member2": "Unhealthy"}), ([("member2", 3)], {"member2": "Unknown"})],
    ids=["nothing placed", "replacement unhealthy", "replacement unknown"],
)
def test_last_copy_guard_keeps_the_task_past_its_timeout(targets: list, health: dict[str, str]) -> None:
    result = assess_tasks(binding(targets, [task(ago=10_000)], health), 600, NOW)
    assert result.kept and result.last_copy and result.next_at is None and not result.removed


def test_directly_purged_task_still_times_out_under_the_guard() -> None:
    result = assess_tasks(binding([], [task(ago=601, purgeMode="Directly")], {}), 600, NOW)
    assert removed(result) == [("member1", "Timeout")]
