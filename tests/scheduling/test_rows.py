"""Rows (``rows``): what the bindings of a cycle share per cluster, and that nothing they share is changed."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any

from federation.model.placement import Taint
from federation.scheduling.cycle_rows import Judges, rows_for
from federation.scheduling.engine import assume, schedule
from federation.scheduling.filters import FilterContext, rerun_filters, run_filters
from federation.scheduling.memo import CycleMemo
from federation.scheduling.placed import Placed, SharedEntries, _everyone_selected, cluster_entries
from federation.scheduling.rows import Row, RowSpec
from federation.scheduling.types import ClusterSnapshot, EngineConfig, ScheduleResult
from tests.scheduling.sched_factories import DYNAMIC, GIB, make_binding, make_cluster, pods_only

SPREAD = {**DYNAMIC, "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]}


def cycle(bindings: list[Any], snapshots: list[Any], config: Any = None) -> list[ScheduleResult]:
    """The bindings decided as the scheduler decides a batch: one memo, each result assumed."""
    memo, results = CycleMemo(), []
    for binding in bindings:
        result = schedule(binding, snapshots, config, memo=memo)
        snapshots = assume(snapshots, result, binding.resource_request, binding.previous)
        results.append(result)
    return results


def test_clusters_a_binding_does_not_mark_share_their_entries_with_the_cycle() -> None:
    snapshots = [pods_only(f"m{i}", 10 + i) for i in range(4)]
    first, second = cycle([make_binding(3, SPREAD, name="a"), make_binding(3, SPREAD, name="b")], snapshots)
    one, two = first.explanation["clusters"], second.explanation["clusters"]
    assert [n for n, e in one.items() if e["selected"]] == ["m2", "m3"]
    assert one["m0"] is two["m0"]  # never selected, the same snapshot: the same entry
    assert {t.name: t.replicas for t in first.clusters} == {"m2": 1, "m3": 2}
    assert (one["m2"]["replicas"], one["m3"]["replicas"]) == (1, 2)


def test_explanations_stay_as_they_were_returned() -> None:
    """Later bindings of the cycle mark, select and place clusters that earlier results share entries for."""
    snapshots = [pods_only(f"m{i}", 4) for i in range(3)]
    snapshots.append(make_cluster("t", taints=[Taint(key="x", effect="NoSchedule")]))
    bindings = [
        make_binding(2, SPREAD, name="a"),
        make_binding(3, DYNAMIC, name="b", previous={"m1": 1}),
        make_binding(2, SPREAD, name="c", avoid=frozenset({"m0"})),
        make_binding(0, {}, name="d", kind="ConfigMap", api_version="v1"),
        make_binding(5, DYNAMIC, name="e"),
    ]
    memo, seen = CycleMemo(), []
    for binding in bindings * 2:
        result = schedule(binding, snapshots, memo=memo)
        seen.append((result, json.dumps(result.explanation)))
        snapshots = assume(snapshots, result, binding.resource_request, binding.previous)
    assert [json.dumps(result.explanation) for result, _ in seen] == [text for _, text in seen]


def test_replicas_marked_for_one_binding_never_reach_another_sharing_the_row() -> None:
    snapshots = [pods_only("full", 0), pods_only("m1", 10)]
    stay = make_binding(1, DYNAMIC, name="stay", previous={"m1": 1})  # takes nothing more: m1 unchanged
    grow = make_binding(3, DYNAMIC, name="grow", previous={"m1": 1})  # the same row of m1, 3 replicas
    first, second = cycle([stay, grow], snapshots)
    assert first.explanation["clusters"]["m1"]["replicas"] == 1
    assert second.explanation["clusters"]["m1"]["replicas"] == 3
    assert first.explanation["clusters"]["full"] is second.explanation["clusters"]["full"]


def test_most_free_memory_follows_the_top_cluster_binding_after_binding() -> None:
    """MostFreeMemory reads the most free memory among the candidates, which moves as clusters take
    replicas: a row keeps the last score it made, and is scored again for another top."""
    config = EngineConfig(score_weights={"MostFreeMemory": 1, "ClusterLocality": 1})
    snapshots = [make_cluster(f"m{i}", allocatable={"memory": (10 + i) * GIB, "pods": 100}) for i in range(3)]
    request = {"memory": 2 * GIB}
    bindings = [make_binding(1, DYNAMIC, name=f"b{i}", resource_request=request) for i in range(6)]
    bindings.append(make_binding(1, DYNAMIC, name="stay", resource_request=request, previous={"m0": 1}))
    with_memo = cycle(bindings, snapshots, config)
    alone, current = [], list(snapshots)
    for binding in bindings:
        alone.append(schedule(binding, current, config))
        current = assume(current, alone[-1], binding.resource_request, binding.previous)
    assert with_memo == alone
    most_free = [r.explanation["clusters"]["m2"]["scores"]["MostFreeMemory"]["score"] for r in alone]
    assert len(set(most_free)) > 1  # m2's relative free memory moved: it was not always the top


def test_without_a_memo_equal_score_parts_share_one_score_dict() -> None:
    result = schedule(make_binding(2, DYNAMIC), [pods_only("a", 5), pods_only("b", 5)])
    a, b = result.explanation["clusters"]["a"], result.explanation["clusters"]["b"]
    assert a["scores"] == {"ClusterLocality": {"score": 0, "weight": 1}}
    assert a["scores"] is b["scores"]


def every_field_set(name: str, **overrides: Any) -> ClusterSnapshot:
    """A snapshot whose every field differs from ``make_cluster``'s defaults (``overrides`` on top)."""
    fields_: dict[str, Any] = {
        "labels": {"env": "prod"},
        "provider": "aws",
        "region": "eu",
        "zone": "eu-1a",
        "zones": ("eu-1a",),
        "taints": (Taint(key="x", effect="NoSchedule"),),
        "ready": False,
        "deleting": True,
        "api_enablements": frozenset({"v1/ConfigMap"}),
        "allocatable": {"pods": 3},
        "allocated": {"pods": 1},
        "allocating": {"pods": 1},
    }
    return make_cluster(name, **{**fields_, **overrides})


def test_with_allocating_is_replace_over_every_field() -> None:
    full = every_field_set("m0")
    defaults = make_cluster("m0", api_enablements=None, allocatable=None)
    assert all(getattr(full, f.name) != getattr(defaults, f.name) for f in fields(full) if f.name != "name")
    assert full.with_allocating({"pods": 2}) == replace(full, allocating={"pods": 2})


def test_same_but_allocating_tells_a_change_of_any_other_field() -> None:
    full = make_cluster("m0", labels={"env": "prod"}, allocated={"pods": 1}, allocating={"pods": 1})
    assert full.same_but_allocating(full.with_allocating({"pods": 2}))
    assert full.same_but_allocating(replace(full))  # equal values, other objects
    other = every_field_set(
        "m1", labels={"env": "dev"}, api_enablements=None, allocated={"pods": 2}, allocating={}
    )
    for f in fields(full):
        if f.name != "allocating":
            changed = replace(full, **{f.name: getattr(other, f.name)})
            assert not full.same_but_allocating(changed), f.name


def test_a_placed_entry_unmarked_is_made_once_and_the_selected_one_is_left_alone() -> None:
    parts = {"ClusterLocality": {"score": 0, "weight": 1}}
    placed = Placed("m0", 0, 7, 5, "eu", 0, {"passed": True}, parts)
    selected = dict(placed.selected_entry)
    assert selected == {
        "filter": {"passed": True},
        "selected": True,
        "replicas": 0,
        "scores": parts,
        "totalScore": 0,
        "allocatable": 5,
        "available": 7,
    }
    assert placed.entry == {**selected, "selected": False}
    assert placed.entry is placed.entry  # made once: results that share the Placed share it
    assert placed.selected_entry == selected


def rows_of(binding: Any, snapshots: list[Any]) -> list[Row]:
    spec = RowSpec(FilterContext(binding, None, EngineConfig(), overflow_allowed=True), binding, True)
    return rows_for(spec, snapshots, Judges(run_filters, rerun_filters), SharedEntries(None), None)


def test_entries_when_every_cluster_is_selected_are_the_general_ones() -> None:
    snapshots = [pods_only(f"m{i}", 10 + i) for i in range(3)]
    rows = rows_of(make_binding(4, DYNAMIC), snapshots)
    placed = [row.placed for row in rows if row.placed is not None]
    marks = {"m2": 3}
    everyone = cluster_entries(rows, placed, list(reversed(placed)), marks)
    assert list(everyone) == ["m0", "m1", "m2"]  # row order, whatever the selection order
    general = {row.name: row.bare_entry for row in rows} | {p.name: p.selected_entry for p in placed}
    assert everyone == general | {"m2": {**general["m2"], "replicas": 3}}
    assert _everyone_selected(rows, placed, placed) == general
    assert _everyone_selected(rows, placed, placed[:2]) is None  # not every cluster selected
    twice = [*rows, rows[0]]
    assert _everyone_selected(twice, [*placed, placed[0]], [*placed, placed[0]]) is None  # a name twice
    assert list(cluster_entries(twice, [*placed, placed[0]], placed)) == ["m0", "m1", "m2"]
