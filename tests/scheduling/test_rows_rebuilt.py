"""Rows worked out from other rows: a row rebuilt for a snapshot new in allocating alone, a member row made
from the row without the binding's lists, and the filter rerun they use, each equal to the row (or verdict)
built from scratch; and the caches they fill, bounded."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.scheduling import cycle_rows, rows
from federation.scheduling.filters import FilterContext, FilterVerdict, rerun_filters, run_filters
from federation.scheduling.placed import SharedEntries
from federation.scheduling.rows import Row, RowSpec
from federation.scheduling.types import BindingInput, ClusterSnapshot, EngineConfig
from tests.scheduling.sched_factories import GIB, make_binding, make_cluster
from tests.scheduling.test_cycle_memo_properties import CONFIGS, PLACEMENTS, REQUESTS, cluster_list

NAMES = ["m0", "m1", "m2"]


def spec_for(binding: BindingInput, config: EngineConfig) -> RowSpec:
    """The spec ``engine`` makes for the binding's first attempt, without extenders or estimators."""
    strategy = binding.placement.strategy()
    terms = binding.placement.affinity_terms()
    overflow = binding.is_workload and strategy in ("DynamicWeight", "Aggregated")
    ctx = FilterContext(binding, terms[0] if terms else None, config, overflow_allowed=overflow)
    return RowSpec(ctx, binding, own_estimate=True)


def view(row: Row) -> tuple[Any, ...]:
    """Everything of a row a result can read."""
    p = row.placed
    placed = None if p is None else (p.name, p.score, p.available, p.allocatable, p.region, p.overflow_order)
    entries = None if p is None else (p.rank, p.selected_entry, p.entry)
    judged = (row.name, row.verdict, row.filter_entry, row.bare_entry)
    worked = (row.own, dict(row.parts), row.free, row.estimate)
    return (judged, worked, placed, entries)


# More allocating, on the scale of ``cluster_list``'s capacity: a cluster that fitted may not, or may still.
allocating = st.fixed_dictionaries(
    {
        "cpu": st.integers(0, 4000),
        "memory": st.integers(0, 16).map(lambda g: g * GIB),
        "pods": st.integers(0, 12),
    }
)


@st.composite
def bindings(draw: st.DrawFn) -> BindingInput:
    return make_binding(
        draw(st.integers(0, 12)),
        draw(st.sampled_from(PLACEMENTS)),
        resource_request=draw(st.sampled_from(REQUESTS)),
        has_replica_requirements=draw(st.booleans()),
        previous=draw(st.dictionaries(st.sampled_from(NAMES), st.integers(0, 3), max_size=2)),
        eviction_clusters=frozenset(draw(st.sets(st.sampled_from(NAMES), max_size=1))),
        service_class=draw(st.sampled_from(["", "db"])),
    )


@settings(max_examples=300, deadline=None)
@given(cluster_list(), bindings(), st.sampled_from(CONFIGS), allocating)
def test_a_rebuilt_row_is_the_row_built_from_scratch(
    clusters: list[ClusterSnapshot], binding: BindingInput, config: EngineConfig, more: dict[str, int]
) -> None:
    spec, shared = spec_for(binding, config), SharedEntries(None)
    for cluster in clusters:
        before = rows.build(spec, run_filters, shared, cluster)
        seen = view(before)
        after = cluster.with_allocating(more)
        rebuilt = rows.rebuilt(spec, rerun_filters, shared, after, before)
        assert view(rebuilt) == view(rows.build(spec, run_filters, shared, after))
        assert view(before) == seen  # the earlier row, shared by earlier results, is left as it was


@settings(max_examples=300, deadline=None)
@given(cluster_list(), bindings(), st.sampled_from(CONFIGS), allocating)
def test_rerun_filters_gives_what_running_them_all_gives(
    clusters: list[ClusterSnapshot], binding: BindingInput, config: EngineConfig, more: dict[str, int]
) -> None:
    ctx = spec_for(binding, config).ctx
    for cluster in clusters:
        before = run_filters(ctx, cluster)
        after = cluster.with_allocating(more)
        again = rerun_filters(ctx, after, before)
        assert again == run_filters(ctx, after)
        if again == before:
            assert again is before  # nothing changed: the very verdict, whose entries rows keep


@settings(max_examples=300, deadline=None)
@given(cluster_list(), bindings(), st.sampled_from(CONFIGS))
def test_a_member_row_is_the_row_built_with_the_lists(
    clusters: list[ClusterSnapshot], binding: BindingInput, config: EngineConfig
) -> None:
    spec, shared = spec_for(binding, config), SharedEntries(None)
    listless_spec = spec.without_lists()
    assert listless_spec.binding.previous == {} and not listless_spec.ctx.binding.eviction_clusters
    for cluster in clusters:
        listless = rows.build(listless_spec, run_filters, shared, cluster)
        made = rows.with_lists(spec, run_filters, shared, cluster, listless)
        assert view(made) == view(rows.build(spec, run_filters, shared, cluster))


def test_member_rows_are_kept_with_the_listless_row_one_per_membership() -> None:
    cluster = make_cluster("m0", allocatable={"pods": 10})
    shared = SharedEntries(None)
    first = spec_for(make_binding(2, {}, previous={"m0": 1}), EngineConfig())
    listless = rows.build(first.without_lists(), run_filters, shared, cluster)
    members = cycle_rows.memberships(first.binding)
    one = cycle_rows._member_row(first, run_filters, shared, members, cluster, listless)
    assert cycle_rows._member_row(first, run_filters, shared, members, cluster, listless) is one
    other = spec_for(make_binding(2, {}, previous={"m0": 2}), EngineConfig())
    two = cycle_rows._member_row(
        other, run_filters, shared, cycle_rows.memberships(other.binding), cluster, listless
    )
    assert two is not one and (one.own, two.own) == (1, 2)
    assert listless.members == {(True, 1, False): one, (True, 2, False): two}


def test_member_rows_kept_with_a_row_are_bounded() -> None:
    cluster = make_cluster("m0", allocatable={"pods": 100})
    shared = SharedEntries(None)
    listless = rows.build(spec_for(make_binding(1, {}), EngineConfig()), run_filters, shared, cluster)
    for held in range(3 * cycle_rows.MEMBER_ROWS):
        spec = spec_for(make_binding(1, {}, previous={"m0": held}), EngineConfig())
        cycle_rows._member_row(
            spec, run_filters, shared, cycle_rows.memberships(spec.binding), cluster, listless
        )
        assert listless.members is not None and len(listless.members) <= cycle_rows.MEMBER_ROWS


def test_a_verdict_says_whether_it_passed_as_a_field() -> None:
    assert FilterVerdict("m0").passed and FilterVerdict("m0", overflow_order=2).passed
    failed = FilterVerdict("m0", "TaintToleration", "tainted", (("TaintToleration", "tainted"),))
    assert not failed.passed
    assert failed == FilterVerdict("m0", "TaintToleration", "tainted", (("TaintToleration", "tainted"),))
