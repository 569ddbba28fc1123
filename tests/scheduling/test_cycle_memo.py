"""``CycleMemo``: reuse for the same snapshot object, a miss after ``assume``, keys that tell bindings apart,
and the quantity parse cache the cycle's snapshots lean on."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.model import quantity
from federation.scheduling import engine, snapshot
from federation.scheduling import memo as memo_module
from federation.scheduling.engine import assume, schedule
from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import ClusterSnapshot, EngineConfig, Headroom, ServiceProfile
from tests.scheduling.sched_factories import DYNAMIC, GIB, make_binding, make_cluster

REQUEST = {"cpu": 500, "memory": GIB}


def clusters(count: int = 4) -> list[ClusterSnapshot]:
    return [make_cluster(f"m{i}") for i in range(count)]


@pytest.fixture
def filter_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The clusters ``run_filters`` was run for, in order (the memo's misses for filter verdicts)."""
    runs: list[str] = []
    real = engine.run_filters

    def counting(ctx: Any, cluster: ClusterSnapshot) -> Any:
        runs.append(cluster.name)
        return real(ctx, cluster)

    monkeypatch.setattr(engine, "run_filters", counting)
    return runs


@pytest.fixture
def refit_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The clusters ``rerun_filters`` was run for (rows rebased on an earlier snapshot's: only the filters
    that read the allocation run again)."""
    runs: list[str] = []
    real = engine.rerun_filters

    def counting(ctx: Any, cluster: ClusterSnapshot, before: Any) -> Any:
        runs.append(cluster.name)
        return real(ctx, cluster, before)

    monkeypatch.setattr(engine, "rerun_filters", counting)
    return runs


class NumberedRuns:
    """A compute function that records the clusters it ran for and answers its run number."""

    def __init__(self) -> None:
        self.clusters: list[str] = []

    def __call__(self, cluster: ClusterSnapshot) -> int:
        self.clusters.append(cluster.name)
        return len(self.clusters)


def test_per_cluster_computes_once_per_snapshot_object() -> None:
    memo, snapshots, runs = CycleMemo(), clusters(3), NumberedRuns()
    assert memo.per_cluster("k", snapshots, runs) == [1, 2, 3]
    assert memo.per_cluster("k", snapshots, runs) == [1, 2, 3]
    assert runs.clusters == ["m0", "m1", "m2"]
    assert (memo.hits, memo.misses) == (3, 3)


def test_per_cluster_misses_for_an_equal_copy_and_for_another_key() -> None:
    memo, snapshots, runs = CycleMemo(), clusters(2), NumberedRuns()
    memo.per_cluster("k", snapshots, runs)
    copy = [replace(snapshots[0]), snapshots[1]]  # equal value, another object: identity is what counts
    assert copy[0] == snapshots[0]
    assert memo.per_cluster("k", copy, runs) == [3, 2]
    assert memo.per_cluster("other", copy, runs) == [4, 5]
    assert runs.clusters == ["m0", "m1", "m0", "m0", "m1"]


def test_per_cluster_never_stores_personal_clusters() -> None:
    memo, snapshots, runs = CycleMemo(), clusters(2), NumberedRuns()
    for _ in range(3):
        memo.per_cluster("k", snapshots, runs, personal={"m0"})
    assert runs.clusters == ["m0", "m1", "m0", "m0"]


def test_second_binding_of_a_policy_reuses_every_verdict(filter_runs: list[str]) -> None:
    memo, snapshots = CycleMemo(), clusters()
    first = make_binding(4, DYNAMIC, name="a", resource_request=REQUEST)
    second = make_binding(4, DYNAMIC, name="b", resource_request=REQUEST)  # equal placement, its own object
    schedule(first, snapshots, memo=memo)
    assert filter_runs == ["m0", "m1", "m2", "m3"]
    result = schedule(second, snapshots, memo=memo)
    assert filter_runs == ["m0", "m1", "m2", "m3"]  # nothing run again
    assert result == schedule(second, snapshots)


def test_assume_makes_only_the_clusters_that_took_replicas_miss(
    filter_runs: list[str], refit_runs: list[str]
) -> None:
    memo, snapshots = CycleMemo(), clusters()
    placement = {**DYNAMIC, "clusterAffinity": {"clusterNames": ["m1", "m2"]}}
    first = make_binding(2, placement, name="a", resource_request=REQUEST)
    result = schedule(first, snapshots, memo=memo)
    assert {t.name for t in result.clusters} == {"m1", "m2"}
    after = assume(snapshots, result, first.resource_request)
    assert [a is b for a, b in zip(after, snapshots, strict=True)] == [True, False, False, True]
    filter_runs.clear()
    second = make_binding(2, placement, name="b", resource_request=REQUEST)
    got = schedule(second, after, memo=memo)
    # m1 and m2 miss, and only they; their rows are rebased on the earlier snapshots' (allocating alone
    # changed), so only the filters that read the allocation run again, and none runs whole
    assert refit_runs == ["m1", "m2"]
    assert filter_runs == []
    assert (memo.rebased, memo.misses) == (2, 6)
    assert got == schedule(second, after)


def test_previous_and_eviction_clusters_are_filtered_for_the_binding_alone(filter_runs: list[str]) -> None:
    memo, snapshots = CycleMemo(), clusters()
    schedule(make_binding(2, DYNAMIC, resource_request=REQUEST), snapshots, memo=memo)
    filter_runs.clear()
    own = make_binding(2, DYNAMIC, resource_request=REQUEST, previous={"m0": 1}, eviction_clusters={"m3"})
    got = schedule(own, snapshots, memo=memo)
    assert filter_runs == ["m0", "m3"]
    assert got == schedule(own, snapshots)


TAINTED = {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}
TOLERATE = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
# The db class keeps all memory free (more than all, strictly): no cluster fits it.
DB = EngineConfig(profiles={"db": ServiceProfile(headroom={"memory": Headroom(percent=100, strict=True)})})


@pytest.mark.parametrize(
    ("first", "second", "cluster", "config"),
    [
        # the request: the second binding's does not fit
        ({"resource_request": REQUEST}, {"resource_request": {"cpu": 200_000}}, {}, None),
        # Duplicated checks every replica: 5 fit in 5 free pods, 6 do not
        (
            {"replicas": 5, "placement": {}},
            {"replicas": 6, "placement": {}},
            {"allocatable": {"pods": 5}},
            None,
        ),
        # tolerations are part of the placement
        ({}, {"placement": {**DYNAMIC, "clusterTolerations": TOLERATE}}, TAINTED, None),
        # the kind: the cluster serves Deployments only
        ({"kind": "StatefulSet"}, {}, {"api_enablements": frozenset({"apps/v1/Deployment"})}, None),
        # the service class picks the headroom
        ({}, {"service_class": "db"}, {}, DB),
    ],
)
def test_bindings_that_read_a_snapshot_differently_never_share_a_verdict(
    first: dict[str, Any], second: dict[str, Any], cluster: dict[str, Any], config: EngineConfig | None
) -> None:
    snapshots = [make_cluster("m0", **cluster), make_cluster("m1", allocatable=None)]
    base: dict[str, Any] = {"replicas": 2, "placement": DYNAMIC}
    bindings = [make_binding(**{**base, **first}, name="a"), make_binding(**{**base, **second}, name="b")]
    memo = CycleMemo()
    with_memo = [schedule(b, snapshots, config, memo=memo) for b in bindings]
    alone = [schedule(b, snapshots, config) for b in bindings]
    assert with_memo == alone
    # each case is a real difference in the verdict on m0, not two bindings the filters treat alike
    m0 = [r.explanation["clusters"]["m0"]["filter"]["passed"] for r in alone]
    assert m0[0] != m0[1]


def test_snapshots_share_parsed_quantities() -> None:
    summary = {"allocatable": {"cpu": "96", "memory": "377Gi", "pods": "110"}, "allocated": {"cpu": "1500m"}}
    manifest = {"metadata": {"name": "m0"}, "status": {"resourceSummary": summary}}
    before = quantity._parse_cached.cache_info().hits
    first, second = snapshot.from_cluster(manifest), snapshot.from_cluster(manifest)
    assert quantity._parse_cached.cache_info().hits >= before + 4
    assert first == second
    assert first.allocatable == {"cpu": 96_000, "memory": 377 * GIB, "pods": 110}
    assert first.allocated == {"cpu": 1500}


def test_parse_errors_are_raised_every_time_and_long_strings_are_parsed_uncached() -> None:
    for _ in range(2):
        with pytest.raises(ValueError, match="'12Qi'"):
            quantity.parse_quantity("12Qi")
    long = "0." + "0" * 80 + "1"
    cached = quantity._parse_cached.cache_info().currsize
    assert quantity.parse_quantity(long) == quantity.parse_quantity("1n")  # rounded up to a nano-unit
    assert quantity._parse_cached.cache_info().currsize <= cached + 1  # "1n" at most


def test_a_position_personal_in_the_last_call_is_looked_up_again() -> None:
    """The last answer's personal values are the binding's own: the next call must not take them."""
    memo, snapshots = CycleMemo(), clusters(3)
    memo.per_cluster("k", snapshots, lambda c: f"{c.name} for binding 1 alone", personal={"m1"})
    assert memo.per_cluster("k", snapshots, lambda c: f"{c.name} shared") == [
        "m0 for binding 1 alone",  # stored: m0 was not personal
        "m1 shared",
        "m2 for binding 1 alone",
    ]


def test_another_order_of_the_same_clusters_answers_in_that_order() -> None:
    memo, snapshots, runs = CycleMemo(), clusters(3), NumberedRuns()
    assert memo.per_cluster("k", snapshots, runs) == [1, 2, 3]
    assert memo.per_cluster("k", list(reversed(snapshots)), runs) == [3, 2, 1]
    fresh = [snapshots[0], replace(snapshots[1]), snapshots[2]]
    assert memo.per_cluster("k", fresh, runs) == [1, 4, 3]
    assert runs.clusters == ["m0", "m1", "m2", "m1"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),  # the key
            st.permutations(range(4)),  # the order of the clusters
            st.sets(st.integers(0, 3), max_size=4),  # positions (in the pool) replaced by a new snapshot
            st.sets(st.sampled_from(["m0", "m1", "m2", "m3", "gone"]), max_size=2),  # personal
            st.integers(2, 4),  # how many clusters of the ordered pool are asked for
        ),
        min_size=1,
        max_size=12,
    )
)
def test_per_cluster_answers_what_compute_would(calls) -> None:
    """Whatever the sequence of keys, orders, new snapshots and personal names: each value is the one
    computed for that very snapshot under that key, and a personal cluster's is this call's own."""
    memo, pool = CycleMemo(), clusters(4)
    for number, (key, order, replaced, personal, count) in enumerate(calls):
        for position in replaced:
            pool[position] = replace(pool[position])
        asked = [pool[i] for i in order][:count]

        def compute(
            cluster: ClusterSnapshot, key: str = key, number: int = number, personal: set[str] = personal
        ) -> tuple[Any, ...]:
            return (key, id(cluster), number if cluster.name in personal else None)

        got = memo.per_cluster(key, asked, compute, personal)
        want = [(key, id(c), number if c.name in personal else None) for c in asked]
        assert got == want


def test_a_variant_is_shared_only_with_calls_giving_the_cluster_the_same_variant() -> None:
    memo, snapshots, runs = CycleMemo(), clusters(3), NumberedRuns()
    assert memo.per_cluster("k", snapshots, runs, variants={"m0": (True, 1)}) == [1, 2, 3]
    assert memo.per_cluster("k", snapshots, runs) == [4, 2, 3]  # m0 without its variant: the key's own
    assert memo.per_cluster("k", snapshots, runs, variants={"m0": (True, 1)}) == [1, 2, 3]
    assert memo.per_cluster("k", snapshots, runs, variants={"m0": (True, 2), "m2": (True, 1)}) == [5, 2, 6]
    assert memo.per_cluster("k", snapshots, runs) == [4, 2, 3]
    assert runs.clusters == ["m0", "m1", "m2", "m0", "m0", "m2"]


def test_previous_clusters_are_shared_by_bindings_holding_as_many_replicas(filter_runs: list[str]) -> None:
    memo, snapshots = CycleMemo(), clusters()
    first = make_binding(2, DYNAMIC, name="a", resource_request=REQUEST, previous={"m0": 1})
    same = make_binding(2, DYNAMIC, name="b", resource_request=REQUEST, previous={"m0": 1})
    more = make_binding(2, DYNAMIC, name="c", resource_request=REQUEST, previous={"m0": 2})
    schedule(first, snapshots, memo=memo)
    filter_runs.clear()
    got = schedule(same, snapshots, memo=memo)
    assert filter_runs == []  # m0 as a cluster holding 1 replica of the binding: the first one's row
    assert got == schedule(same, snapshots)
    filter_runs.clear()
    got = schedule(more, snapshots, memo=memo)
    assert filter_runs == ["m0"]  # m0 holds 2 replicas of this one: its available replicas differ
    assert got == schedule(more, snapshots)
    m0 = got.explanation["clusters"]["m0"]
    assert m0["available"] == m0["allocatable"] + 2


def test_vectors_and_tables_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo_module, "VECTOR_LIMIT", 3)
    monkeypatch.setattr(memo_module, "TABLE_LIMIT", 2)
    memo, snapshots = CycleMemo(), clusters(2)
    for key in range(10):
        assert memo.per_cluster(key, snapshots, NumberedRuns()) == [1, 2]
        assert len(memo._vectors) <= 3
    table = memo.table("t")
    table.update(a=1, b=2)
    assert memo.table("t") == {}  # full: it starts again empty
    assert memo.table("t") is table


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),  # the key
            st.sets(st.integers(0, 3), max_size=2),  # positions replaced by a new snapshot
            st.dictionaries(st.sampled_from(["m0", "m1", "m2", "m3", "gone"]), st.integers(0, 2), max_size=3),
            st.booleans(),  # the pool reversed
        ),
        min_size=1,
        max_size=12,
    )
)
def test_per_cluster_with_variants_answers_what_compute_would(calls) -> None:
    """Whatever the sequence of keys, new snapshots, orders and variants: each value is the one computed
    for that very snapshot under that key and the cluster's variant in this call."""
    memo, pool = CycleMemo(), clusters(4)
    for key, replaced, variants, reverse in calls:
        for position in replaced:
            pool[position] = replace(pool[position])
        asked = list(reversed(pool)) if reverse else list(pool)

        def compute(cluster: ClusterSnapshot, key: str = key, variants: dict[str, int] = variants) -> Any:
            return (key, id(cluster), variants.get(cluster.name))

        got = memo.per_cluster(key, asked, compute, variants=variants)
        assert got == [(key, id(c), variants.get(c.name)) for c in asked]
