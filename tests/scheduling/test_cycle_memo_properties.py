"""Hypothesis: a batch scheduled with one shared ``CycleMemo`` gives exactly the results it gives without one.

The batch runs as the scheduler controller runs it: bindings in order over one list of snapshots, each
successful decision assumed (``engine.assume``) before the next binding. Bindings draw their placement and
request from small pools, so several share a memo key, and every input a filter, score or estimate reads
varies: affinity terms and overflow tiers, tolerations, spread constraints, strategies, Duplicated replica
counts, kinds, service classes, previous placements, avoid and eviction lists, headroom, disabled plugins
and a deterministic extender (filter, priorities, replicas, an ignored resource).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.model.placement import Taint
from federation.scheduling.engine import assume, schedule
from federation.scheduling.extender import ExtenderFilterResult, HostPriority
from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import (
    BindingInput,
    ClusterSnapshot,
    EngineConfig,
    Headroom,
    ScheduleResult,
    ServiceProfile,
    TargetCluster,
)
from tests.scheduling.sched_factories import (
    AGGREGATED,
    DEFAULT_APIS,
    DYNAMIC,
    GIB,
    make_binding,
    make_cluster,
)

NAMES = [f"m{i}" for i in range(6)]
DEPLOYMENTS_ONLY = frozenset({"apps/v1/Deployment"})
PROD = {"labelSelector": {"matchLabels": {"env": "prod"}}}
DEV = {"labelSelector": {"matchLabels": {"env": "dev"}}}
TOLERATE = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
PLACEMENTS: list[dict[str, Any]] = [
    DYNAMIC,
    AGGREGATED,
    {},  # Duplicated
    {"replicaScheduling": {"replicaSchedulingType": "Divided"}},  # StaticWeight, every cluster weight 1
    {**DYNAMIC, "clusterAffinity": PROD},
    {**DYNAMIC, "clusterTolerations": TOLERATE},
    {**AGGREGATED, "spreadConstraints": [{"spreadByField": "region", "minGroups": 1, "maxGroups": 2}]},
    {**DYNAMIC, "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]},
    {**DYNAMIC, "clusterAffinities": [{"affinityName": "prod", **PROD}, {"affinityName": "any"}]},
    {**DYNAMIC, "clusterAffinities": [
        {"affinityName": "primary", **PROD, "overflowAffinities": [{"affinityName": "burst", **DEV}]}]},
    {"clusterAffinity": {"clusterNames": ["m0", "m2", "m4"]}, "clusterTolerations": TOLERATE},
]  # fmt: skip
REQUESTS: list[dict[str, int]] = [
    {},
    {"cpu": 500},
    {"cpu": 250, "memory": GIB},
    {"memory": 4 * GIB},
    {"cpu": 100, "example.com/gpu": 1},
]
CONFIGS = [
    EngineConfig(),
    EngineConfig(
        score_weights={
            "ClusterLocality": 1,
            "LeastAllocated": 1,
            "MostFreeMemory": 2,
            "BalancedAllocation": 1,
            "MoreFreeMemoryRatio": 3,
        },
        headroom={"memory": Headroom(percent=10), "pods": Headroom(floor=2)},
        profiles={
            "db": ServiceProfile(
                score_weights={"MoreFreeMemoryRatio": 1000, "MostFreeMemory": 1, "ClusterLocality": 1},
                headroom={
                    "cpu": Headroom(strict=True),
                    "memory": Headroom(percent=40, strict=True, request_factor=2),
                    "pods": Headroom(floor=4),
                },
            )
        },
    ),
    EngineConfig(
        resource_fit=False,
        disabled_plugins=frozenset({"TaintToleration", "ClusterLocality"}),
        api_enablements_unreported_pass=True,
        score_weights={"ClusterLocality": 1, "LeastAllocated": 2},
    ),
]


@dataclass(frozen=True)
class ParityExtender:
    """A deterministic extender: interested in even-replica Deployments, rejects clusters ending in 1,
    prioritizes by cluster number and the binding's replicas, bounds each cluster to 3 more replicas, and
    owns the ``example.com/gpu`` resource (left out of the engine's own fit and estimate)."""

    name: str = "parity"
    weight: int = 2
    ignorable: bool = False
    binder: bool = False
    ignored_resources: frozenset[str] = frozenset({"example.com/gpu"})

    def is_interested(self, binding: BindingInput) -> bool:
        return binding.kind == "Deployment" and binding.replicas % 2 == 0

    def filter(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> ExtenderFilterResult:
        keep = tuple(c.name for c in clusters if not c.name.endswith("1"))
        return ExtenderFilterResult(keep, failed={"m1": "m1 is odd"})

    def prioritize(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> list[HostPriority]:
        return [HostPriority(c.name, (int(c.name[1:]) + binding.replicas) % 11) for c in clusters]

    def max_replicas(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> Mapping[str, int]:
        return {c.name: 3 for c in clusters}

    def bind(self, binding: BindingInput, target: TargetCluster) -> None:
        raise AssertionError("the engine never binds")


resources = st.fixed_dictionaries(
    {
        "cpu": st.integers(0, 4000),
        "memory": st.integers(0, 16).map(lambda g: g * GIB),
        "pods": st.integers(0, 12),
    }
)


@st.composite
def cluster_list(draw: st.DrawFn) -> list[ClusterSnapshot]:
    out = []
    for name in NAMES[: draw(st.integers(1, len(NAMES)))]:
        allocatable = draw(st.one_of(st.none(), resources))
        out.append(
            make_cluster(
                name,
                labels={"env": draw(st.sampled_from(["prod", "dev"]))},
                region=draw(st.sampled_from(["r0", "r1", ""])),
                zones=draw(st.sampled_from([(), ("z1",)])),
                taints=draw(st.sampled_from([(), (Taint(key="dedicated", effect="NoSchedule"),)])),
                api_enablements=draw(st.sampled_from([DEFAULT_APIS, DEPLOYMENTS_ONLY, frozenset(), None])),
                deleting=draw(st.integers(0, 9)) == 0,
                allocatable=allocatable,
                allocated=draw(resources) if allocatable is not None and draw(st.booleans()) else {},
            )
        )
    return out


names = st.sets(st.sampled_from([*NAMES, "gone"]), max_size=3)


@st.composite
def binding_list(draw: st.DrawFn) -> list[BindingInput]:
    # A few placements and requests per batch, so that bindings share memo keys and then differ in the
    # other inputs (replicas, kind, service class, lists) that the keys must tell apart.
    placements = draw(st.lists(st.sampled_from(PLACEMENTS), min_size=1, max_size=3))
    requests = draw(st.lists(st.sampled_from(REQUESTS), min_size=1, max_size=2))
    out = []
    for index in range(draw(st.integers(1, 10))):
        kind, api_version = draw(st.sampled_from([("Deployment", "apps/v1"), ("ConfigMap", "v1")]))
        out.append(
            make_binding(
                draw(st.integers(0, 12)) if kind == "Deployment" else 0,
                draw(st.sampled_from(placements)),  # each binding its own Placement object, equal values
                name=f"b{index}",
                uid=draw(st.sampled_from(["", "4f6a", "d1ce"])),
                kind=kind,
                api_version=api_version,
                resource_request=draw(st.sampled_from(requests)),
                has_replica_requirements=draw(st.booleans()),
                previous=draw(
                    st.dictionaries(st.sampled_from([*NAMES, "gone"]), st.integers(0, 4), max_size=3)
                ),
                fresh=draw(st.booleans()),
                avoid=frozenset(draw(names)),
                eviction_clusters=frozenset(draw(names)),
                observed_affinity=draw(st.sampled_from(["", "prod", "any", "primary"])),
                service_class=draw(st.sampled_from(["", "db"])),
            )
        )
    return out


def run_batch(
    bindings: Sequence[BindingInput],
    clusters: Sequence[ClusterSnapshot],
    config: EngineConfig,
    extenders: Sequence[ParityExtender],
    memo: CycleMemo | None,
) -> list[ScheduleResult]:
    snapshots = list(clusters)
    results = []
    for binding in bindings:
        result = schedule(binding, snapshots, config, extenders, memo=memo)
        snapshots = assume(snapshots, result, binding.resource_request, binding.previous)
        results.append(result)
    return results


@settings(max_examples=250, deadline=None)
@given(
    binding_list(),
    cluster_list(),
    st.sampled_from(CONFIGS),
    st.sampled_from([(), (ParityExtender(),)]),
    st.booleans(),
)
def test_shared_memo_gives_the_same_results_as_none(
    bindings: list[BindingInput],
    clusters: list[ClusterSnapshot],
    config: EngineConfig,
    extenders: tuple[ParityExtender, ...],
    twice: bool,
) -> None:
    batch = bindings * 2 if twice else bindings  # the same binding again: every key seen before
    expected = run_batch(batch, clusters, config, extenders, None)
    actual = run_batch(batch, clusters, config, extenders, CycleMemo())
    for want, got in zip(expected, actual, strict=True):
        assert got.clusters == want.clusters
        assert (got.result, got.message) == (want.result, want.message)
        assert got.explanation == want.explanation
        assert got == want


@settings(max_examples=100, deadline=None)
@given(binding_list(), cluster_list(), st.sampled_from(CONFIGS), st.sampled_from([(), (ParityExtender(),)]))
def test_results_never_change_after_they_are_returned(
    bindings: list[BindingInput],
    clusters: list[ClusterSnapshot],
    config: EngineConfig,
    extenders: tuple[ParityExtender, ...],
) -> None:
    """A cycle's results share rows and explanation entries: no later binding's marks reach an earlier one."""
    snapshots, memo, seen = list(clusters), CycleMemo(), []
    for binding in bindings * 2:
        result = schedule(binding, snapshots, config, extenders, memo=memo)
        seen.append((result, json.dumps(result.explanation, sort_keys=True)))
        snapshots = assume(snapshots, result, binding.resource_request, binding.previous)
    now = [json.dumps(result.explanation, sort_keys=True) for result, _ in seen]
    assert now == [text for _, text in seen]


def changed(cluster: ClusterSnapshot, kind: str) -> ClusterSnapshot:
    """``cluster`` after a status update between two batches: none, allocating alone (what the memo rebases
    rows on), or a field the filters read."""
    if kind == "allocating":
        return cluster.with_allocating({**cluster.allocating, "pods": cluster.allocating.get("pods", 0) + 2})
    if kind == "allocated":
        return replace(cluster, allocated={**cluster.allocated, "cpu": cluster.allocated.get("cpu", 0) + 900})
    if kind == "labels":
        return replace(cluster, labels={"env": "dev" if cluster.labels.get("env") == "prod" else "prod"})
    if kind == "taints":
        return replace(
            cluster, taints=() if cluster.taints else (Taint(key="dedicated", effect="NoSchedule"),)
        )
    return cluster


@settings(max_examples=150, deadline=None)
@given(
    binding_list(),
    cluster_list(),
    st.sampled_from(CONFIGS),
    st.sampled_from([(), (ParityExtender(),)]),
    st.lists(
        st.lists(
            st.sampled_from(["none", "allocating", "allocated", "labels", "taints"]), min_size=6, max_size=6
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_a_memo_carried_over_batches_gives_the_same_results_as_none(
    bindings: list[BindingInput],
    clusters: list[ClusterSnapshot],
    config: EngineConfig,
    extenders: tuple[ParityExtender, ...],
    updates: list[list[str]],
) -> None:
    """As a scheduler pass runs its batches: one memo for all of them, each batch starting from the snapshots
    the last one assumed, some of them updated in between (unchanged ones the very same objects)."""
    memo, with_memo, alone = CycleMemo(), list(clusters), list(clusters)
    for kinds in updates:
        with_memo = [changed(c, kind) for c, kind in zip(with_memo, kinds, strict=False)]
        alone = [changed(c, kind) for c, kind in zip(alone, kinds, strict=False)]
        for binding in bindings:
            got = schedule(binding, with_memo, config, extenders, memo=memo)
            want = schedule(binding, alone, config, extenders)
            assert got == want
            with_memo = assume(with_memo, got, binding.resource_request, binding.previous)
            alone = assume(alone, want, binding.resource_request, binding.previous)
