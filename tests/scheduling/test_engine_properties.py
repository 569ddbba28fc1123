"""Hypothesis properties of the whole engine: totals, inertia, determinism, Duplicated/static invariants."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from federation.scheduling.engine import schedule
from federation.scheduling.types import EngineConfig
from tests.scheduling.sched_factories import AGGREGATED, DYNAMIC, make_binding, pods_only

capacities = st.lists(st.integers(0, 40), min_size=1, max_size=8)
strategies = st.sampled_from([DYNAMIC, AGGREGATED, {"replicaScheduling": {}}])


def clusters_for(caps: list[int]) -> list:  # type: ignore[type-arg]
    return [pods_only(f"m{i}", cap) for i, cap in enumerate(caps)]


def placed(result: object) -> dict[str, int]:
    return {t.name: t.replicas for t in result.clusters}  # type: ignore[attr-defined]


@settings(max_examples=200, deadline=None)
@given(capacities, st.integers(1, 120), strategies, st.text(max_size=6))
def test_sum_equals_replicas_when_capacity_allows(
    caps: list[int], replicas: int, placement: dict, uid: str
) -> None:  # type: ignore[type-arg]
    # Karmada's invariants, so Karmada's behaviour: resource fit (on by default) would filter full clusters.
    karmada = EngineConfig(resource_fit=False)
    result = schedule(make_binding(replicas, placement, uid=uid), clusters_for(caps), karmada)
    if placement is DYNAMIC or placement is AGGREGATED:
        if sum(caps) >= replicas:
            assert result.succeeded and sum(placed(result).values()) == replicas
            assert all(placed(result)[n] <= caps[int(n[1:])] for n in placed(result))
        else:
            assert result.result == "Unschedulable"
    else:  # static weight, no capacity check
        assert sum(placed(result).values()) == replicas


@settings(max_examples=200, deadline=None)
@given(capacities, st.integers(0, 60), st.integers(1, 60), st.sampled_from([DYNAMIC, AGGREGATED]))
def test_scale_up_never_moves_existing_replicas(
    caps: list[int], before: int, extra: int, placement: dict
) -> None:  # type: ignore[type-arg]
    clusters = clusters_for(caps)
    first = schedule(make_binding(before, placement), clusters)
    assume(first.succeeded)
    previous = placed(first)
    grown = schedule(make_binding(before + extra, placement, previous=previous), clusters)
    assume(grown.succeeded)
    after = placed(grown)
    assert all(after.get(name, 0) >= count for name, count in previous.items())
    assert sum(after.values()) == before + extra


@settings(max_examples=150, deadline=None)
@given(capacities, st.integers(1, 60), strategies, st.randoms(use_true_random=False))
def test_deterministic_under_cluster_order(caps: list[int], replicas: int, placement: dict, rnd) -> None:  # type: ignore[no-untyped-def, type-arg]
    clusters = clusters_for(caps)
    shuffled = list(clusters)
    rnd.shuffle(shuffled)
    binding = make_binding(replicas, placement, uid="d1ce")
    assert schedule(binding, clusters).clusters == schedule(binding, shuffled).clusters


@settings(max_examples=100, deadline=None)
@given(capacities, st.integers(1, 60))
def test_scale_down_only_shrinks(caps: list[int], replicas: int) -> None:
    clusters = clusters_for([c + 120 for c in caps])
    first = placed(schedule(make_binding(replicas * 2, DYNAMIC), clusters))
    down = placed(schedule(make_binding(replicas, DYNAMIC, previous=first), clusters))
    assert sum(down.values()) == replicas
    assert all(down.get(n, 0) <= first.get(n, 0) for n in set(first) | set(down))
