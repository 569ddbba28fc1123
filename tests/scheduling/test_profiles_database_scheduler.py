"""The database scheduler's predicates and MoreMem priority, from the shipped profile file, at their boundaries.

Every row is one cluster state next to a boundary of the original inequality, with whether one replica
fits. ``original_*`` restate the original formulas with exact fractions, independently of the engine,
and must agree with each row's expectation; the engine (filter and estimator) must agree with both.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from federation.scheduling.engine import schedule
from federation.scheduling.estimator import general_max_replicas
from federation.scheduling.filters import FilterContext, resource_fit
from federation.scheduling.fit import more_free_memory_ratio
from federation.scheduling.profiles import engine_config
from federation.scheduling.scores import score_clusters
from federation.scheduling.types import ClusterSnapshot, EngineConfig, Headroom
from federation.settings import load_settings
from tests.scheduling.sched_factories import DYNAMIC, GIB, make_binding, make_cluster

PROFILE_FILE = Path(__file__).resolve().parents[2] / "config" / "profiles" / "database-scheduler.yaml"
CONFIG = engine_config(load_settings(PROFILE_FILE).scheduler)
TI = 1024 * GIB
DISK = "ephemeral-storage"
ROOMY = {"cpu": 64_000, "memory": 256 * GIB, DISK: 4 * TI, "pods": 110}
ONE_CLUSTER = {**DYNAMIC, "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]}


def cluster(allocatable: dict[str, int], allocated: dict[str, int], name: str = "c") -> ClusterSnapshot:
    return make_cluster(name, allocatable={**ROOMY, **allocatable}, allocated=allocated)


def fits(service_class: str, request: dict[str, int], snapshot: ClusterSnapshot) -> bool:
    binding = make_binding(1, DYNAMIC, resource_request=request, service_class=service_class)
    return resource_fit(FilterContext(binding, None, CONFIG), snapshot) is None


# -- the original formulas ------------------------------------------------------------------------------


def original_disk(total: int, requested: int, request: int) -> bool:
    hold = max(Fraction(total, 10), Fraction(250 * GIB))
    free = total - requested
    return requested + request <= total - hold and free - request >= hold


def original_mysql_memory(total: int, free: int, request: int) -> bool:
    return free - request > Fraction(total, 10)


def original_cpu(free: int, request: int) -> bool:
    return free > request


def chosen_redis_memory(free: int, request: int) -> bool:
    return free >= 2 * request


# -- disk: mysql and pika -------------------------------------------------------------------------------

R = 100 * GIB
TENTH_OF_4TI = 439_804_651_111  # 10% of 4Ti is 439,804,651,110.4 bytes: the least integer hold above it
DISK_ROWS = [
    # (total, requested, expected, what the row shows)
    (TI, TI - 250 * GIB - R, True, "1Ti: the 250Gi floor beats 10% (102.4Gi); equal"),
    (TI, TI - 250 * GIB - R + 1, False, "1Ti: one byte over the floor"),
    (2500 * GIB, 2150 * GIB, True, "2500Gi: 10% equals the 250Gi floor; equal"),
    (2500 * GIB, 2150 * GIB + 1, False, "2500Gi: one byte over"),
    (2000 * GIB, 1650 * GIB + 1, False, "2000Gi: 10% (200Gi) would fit, the 250Gi floor does not"),
    (4 * TI, 4 * TI - R - TENTH_OF_4TI, True, "4Ti: 10% beats the floor; at the boundary"),
    (4 * TI, 4 * TI - R - TENTH_OF_4TI + 1, False, "4Ti: one byte over 10%"),
]


@pytest.mark.parametrize("service_class", ["mysql", "pika"])
@pytest.mark.parametrize(("total", "requested", "expected", "row"), DISK_ROWS, ids=[r[3] for r in DISK_ROWS])
def test_disk_hold_is_the_larger_of_ten_percent_and_250gi(
    service_class: str, total: int, requested: int, expected: bool, row: str
) -> None:
    assert original_disk(total, requested, R) is expected, row
    snapshot = cluster({DISK: total}, {DISK: requested})
    assert fits(service_class, {DISK: R}, snapshot) is expected, row


def test_disk_rule_applies_to_a_replica_requesting_no_disk_and_not_to_other_classes() -> None:
    past_hold = cluster({DISK: TI}, {DISK: TI - 250 * GIB + 1})
    assert not original_disk(TI, TI - 250 * GIB + 1, 0)
    assert not fits("mysql", {"cpu": 1000}, past_hold)
    assert not fits("pika", {"cpu": 1000}, past_hold)
    assert fits("redis", {"cpu": 1000}, past_hold)
    assert fits("", {"cpu": 1000}, past_hold)
    assert fits("mysql", {"cpu": 1000}, cluster({DISK: TI}, {DISK: TI - 250 * GIB}))


# -- memory: mysql (strict 10%) and redis (twice the request) -------------------------------------------

M = 8 * GIB
MEMORY_ROWS = [
    # (total, free, expected, what the row shows)
    (100 * GIB, M + 10 * GIB, False, "free - request equals 10% exactly: strict, so it does not fit"),
    (100 * GIB, M + 10 * GIB + 1, True, "one byte more than 10%"),
    (256 * GIB, M + 27_487_790_694, False, "10% of 256Gi is 27,487,790,694.4 bytes: below it"),
    (256 * GIB, M + 27_487_790_695, True, "the least integer above 10% of 256Gi"),
]


@pytest.mark.parametrize(("total", "free", "expected", "row"), MEMORY_ROWS, ids=[r[3] for r in MEMORY_ROWS])
def test_mysql_memory_keeps_more_than_ten_percent_free(
    total: int, free: int, expected: bool, row: str
) -> None:
    assert original_mysql_memory(total, free, M) is expected, row
    snapshot = cluster({"memory": total}, {"memory": total - free})
    assert fits("mysql", {"memory": M}, snapshot) is expected, row


@pytest.mark.parametrize(("free", "expected"), [(2 * M, True), (2 * M - 1, False)])
def test_redis_memory_needs_room_for_its_request_twice(free: int, expected: bool) -> None:
    assert chosen_redis_memory(free, M) is expected
    snapshot = cluster({"memory": 64 * GIB}, {"memory": 64 * GIB - free})
    assert fits("redis", {"memory": M}, snapshot) is expected


def test_classes_without_a_memory_rule_fit_memory_exactly() -> None:
    exactly = cluster({"memory": 64 * GIB}, {"memory": 64 * GIB - M})
    assert fits("pika", {"memory": M}, exactly) and fits("", {"memory": M}, exactly)
    assert not fits("pika", {"memory": M + 1}, exactly)
    assert not fits("mysql", {"memory": M}, exactly)  # nothing left above its 10%


# -- cpu: every class, strict ---------------------------------------------------------------------------


@pytest.mark.parametrize("service_class", ["mysql", "pika", "redis", "", "unlisted"])
@pytest.mark.parametrize(("free", "expected"), [(2000, False), (2001, True)])
def test_cpu_free_must_exceed_the_request(service_class: str, free: int, expected: bool) -> None:
    assert original_cpu(free, 2000) is expected
    snapshot = cluster({"cpu": 8000}, {"cpu": 8000 - free})
    assert fits(service_class, {"cpu": 2000}, snapshot) is expected


# -- the estimator counts replicas under the same rules -------------------------------------------------


def test_the_estimate_follows_the_class_rules() -> None:
    mysql = CONFIG.profile_for("mysql").headroom
    disk_bound = cluster({DISK: TI}, {})
    # (1024Gi - 250Gi hold) / 100Gi = 7.74: 7 replicas; an 8th would leave 74Gi < 250Gi free.
    assert general_max_replicas(disk_bound, {DISK: R, "cpu": 100}, mysql) == 7
    assert original_disk(TI, 6 * R, R) and not original_disk(TI, 7 * R, R)
    # cpu strict: 4 cores, 1 core each -> 3 (a 4th would leave 0, not more than 0).
    assert general_max_replicas(cluster({"cpu": 4000}, {}), {"cpu": 1000}, mysql) == 3
    # redis: 64Gi, 8Gi each needing 16Gi free -> 4.
    redis = CONFIG.profile_for("redis").headroom
    assert general_max_replicas(cluster({"memory": 64 * GIB}, {}), {"memory": M}, redis) == 4
    past_hold = cluster({DISK: TI}, {DISK: TI - 200 * GIB})
    assert general_max_replicas(past_hold, {"cpu": 100}, mysql) == 0  # the rule holds at zero request


def test_engine_divides_mysql_replicas_by_the_rules() -> None:
    small, large = cluster({DISK: TI}, {}, "small"), cluster({DISK: 2 * TI}, {}, "large")
    binding = make_binding(24, DYNAMIC, resource_request={DISK: R}, service_class="mysql")
    result = schedule(binding, [small, large], CONFIG)
    # Capacity 7 (small) and 17 ((2048Gi - 250Gi) / 100Gi = 17.98): 24 replicas fill both exactly.
    assert result.explanation["clusters"]["large"]["available"] == 17
    assert {t.name: t.replicas for t in result.clusters} == {"small": 7, "large": 17}
    one_more = schedule(make_binding(25, DYNAMIC, resource_request={DISK: R}, service_class="mysql"),
                        [small, large], CONFIG)  # fmt: skip
    assert one_more.result == "Unschedulable"
    assert result.explanation["profile"] == "mysql"


# -- the MoreMem priority -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "free", "score"),
    [
        (10 * GIB, 7 * GIB, 7),
        (10 * GIB, 7 * GIB - 1, 6),  # truncated like the original's integer priority
        (10 * GIB, 10 * GIB, 10),
        (10 * GIB, 0, 0),
        (10 * GIB, -GIB, 0),  # over-committed
        (16 * GIB, 12 * GIB, 7),
        (64 * GIB, 16 * GIB, 2),
    ],
)
def test_more_free_memory_ratio_is_free_over_total_times_ten(total: int, free: int, score: int) -> None:
    snapshot = make_cluster("c", allocatable={"memory": total}, allocated={"memory": total - free})
    assert more_free_memory_ratio(snapshot) == score
    assert more_free_memory_ratio(ClusterSnapshot("unknown")) == 0
    assert more_free_memory_ratio(make_cluster("nomem", allocatable={"cpu": 1000})) == 0


def memory_clusters() -> list[ClusterSnapshot]:
    small = cluster({"memory": 16 * GIB}, {"memory": 4 * GIB}, "small-75pct-free")
    large = cluster({"memory": 64 * GIB}, {"memory": 48 * GIB}, "large-25pct-free")
    return [large, small]


def placed_on(binding: Any, config: EngineConfig) -> list[str]:
    return [t.name for t in schedule(binding, memory_clusters(), config).clusters]


def test_mysql_prefers_the_larger_free_memory_ratio_with_weight_a_million() -> None:
    binding = make_binding(1, ONE_CLUSTER, resource_request={"memory": GIB}, service_class="mysql")
    assert placed_on(binding, CONFIG) == ["small-75pct-free"]
    scores = score_clusters(binding, memory_clusters(), CONFIG)
    assert scores["small-75pct-free"].parts["MoreFreeMemoryRatio"] == (7, 1_000_000)
    assert scores["large-25pct-free"].parts["MoreFreeMemoryRatio"] == (2, 1_000_000)
    # MostFreeMemory normalises by the most free memory and picks the other one.
    most_free = EngineConfig(score_weights={"MostFreeMemory": 1})
    assert placed_on(binding, most_free) == ["large-25pct-free"]


def test_locality_only_breaks_ties_of_the_memory_ratio() -> None:
    stay = make_binding(1, ONE_CLUSTER, previous={"large-25pct-free": 1}, service_class="mysql")
    assert placed_on(stay, CONFIG) == ["small-75pct-free"]  # 7,000,000 beats 2,000,000 + 100
    even = [cluster({"memory": 16 * GIB}, {}, "a"), cluster({"memory": 16 * GIB}, {}, "b")]
    tied = make_binding(1, ONE_CLUSTER, previous={"b": 1}, service_class="mysql")
    assert [t.name for t in schedule(tied, even, CONFIG).clusters] == ["b"]


def test_profiles_from_the_file_are_complete() -> None:
    assert sorted(CONFIG.profiles) == ["mysql", "pika", "redis"]
    assert CONFIG.resource_fit
    assert CONFIG.profile_for("mysql").headroom == {
        "cpu": Headroom(strict=True),
        "memory": Headroom(percent=10, strict=True),
        DISK: Headroom(percent=10, floor=250 * GIB),
    }
    assert CONFIG.profile_for("redis").headroom["memory"] == Headroom(request_factor=2)
    assert CONFIG.profile_for("pika").score_weights == {"ClusterLocality": 1}  # the top-level weights
    assert CONFIG.profile_for("anything-else") == CONFIG.profile_for("")
    assert CONFIG.profile_for("").headroom == {"cpu": Headroom(strict=True)}
