"""Full ``engine.schedule`` of one binding (filters, scores, estimate, selection, division, explanation).

Scenarios over 100 and 1,000 clusters: DynamicWeight with every score plugin weighted, Duplicated, and
DynamicWeight with a cluster spread constraint. Prints a markdown table (single core).

``--batch``: one scheduler cycle's worth instead, 1,000 bindings rescheduled in order over 100 clusters
(one DynamicWeight placement and one request shared by all, each binding with its own placement object and
previous placement), with ``engine.assume`` between them as the controller does, without and with a
``CycleMemo``; the two runs must give identical results.
"""

from __future__ import annotations

import random
import sys
import time

from federation.model.placement import Placement, Taint
from federation.scheduling.engine import assume, schedule
from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import BindingInput, ClusterSnapshot, EngineConfig, Headroom, ScheduleResult

GIB = 1024**3
APIS = frozenset({"apps/v1/Deployment"})
DYNAMIC = {"replicaScheduling": {"replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}  # fmt: skip
SCENARIOS = {  # label: (placement, replicas)
    "dynamic, all scores": (DYNAMIC, 1000),
    "duplicated": ({}, 10),
    "dynamic + spread maxGroups 10": (
        {**DYNAMIC, "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 10}]},
        1000,
    ),
}
CONFIG = EngineConfig(
    score_weights={"ClusterLocality": 1, "LeastAllocated": 1, "MostFreeMemory": 1, "BalancedAllocation": 1},
    headroom={"ephemeral-storage": Headroom(10, 250 * GIB)},
)


def clusters(n: int, rnd: random.Random) -> list[ClusterSnapshot]:
    out = []
    for i in range(n):
        taints = (Taint(key="dedicated", effect="NoSchedule"),) if i % 10 == 0 else ()
        out.append(
            ClusterSnapshot(
                f"member{i:04d}",
                labels={"env": "prod" if i % 2 else "dev"},
                region=f"region{i % 5}",
                taints=taints,
                api_enablements=APIS,
                allocatable={
                    "cpu": 200_000,
                    "memory": 800 * GIB,
                    "ephemeral-storage": 2048 * GIB,
                    "pods": 1100,
                },
                allocated={"cpu": rnd.randint(0, 150_000), "memory": rnd.randint(0, 600) * GIB, "pods": 100},
            )
        )
    return out


def batch_bindings(n: int, names: list[str], rnd: random.Random) -> list[BindingInput]:
    """Bindings of one policy and request, each already on 3 clusters, rescheduled (``fresh``)."""
    out = []
    for i in range(n):
        binding = BindingInput(
            kind="Deployment", api_version="apps/v1", name=f"web{i}", namespace="default", uid=f"4f6a{i:04d}",
            replicas=rnd.randint(5, 30),
            resource_request={"cpu": 250, "memory": GIB // 2, "ephemeral-storage": GIB},
            has_replica_requirements=True, placement=Placement.model_validate(DYNAMIC),
            previous={name: rnd.randint(1, 3) for name in rnd.sample(names, 3)}, fresh=True,
        )  # fmt: skip
        out.append(binding)
    return out


def run_batch(
    bindings: list[BindingInput], snapshots: list[ClusterSnapshot], memo: CycleMemo | None
) -> list[ScheduleResult]:
    """The controller's loop: schedule each binding, then assume what it took for the next ones."""
    results = []
    for binding in bindings:
        result = schedule(binding, snapshots, CONFIG, memo=memo)
        snapshots = assume(snapshots, result, binding.resource_request, binding.previous)
        results.append(result)
    return results


def main_batch(count: int = 1000, cluster_count: int = 100) -> None:
    rnd = random.Random(7)
    snapshot = clusters(cluster_count, rnd)
    bindings = batch_bindings(count, [c.name for c in snapshot], rnd)
    print("| clusters | bindings | memo | seconds per batch | ms per binding | memo hits / misses |")
    print("|---:|---:|---|---:|---:|---:|")
    outcomes = []
    for memo in (None, CycleMemo()):
        start = time.perf_counter()
        results = run_batch(bindings, snapshot, memo)
        elapsed = time.perf_counter() - start
        outcomes.append(results)
        counts = f"{memo.hits:,} / {memo.misses:,}" if memo else "-"
        print(
            f"| {cluster_count} | {count:,} | {'yes' if memo else 'no'} | {elapsed:.2f} "
            f"| {1000 * elapsed / count:.2f} | {counts} |"
        )
    assert outcomes[0] == outcomes[1], "the memo changed a result"
    assert all(r.succeeded for r in outcomes[0])


def main() -> None:
    rnd = random.Random(7)
    print("| clusters | scenario | replicas | schedules/s | ms per schedule |")
    print("|---:|---|---:|---:|---:|")
    for n in (100, 1000):
        snapshot = clusters(n, rnd)
        for label, (placement, replicas) in SCENARIOS.items():
            binding = BindingInput(
                kind="Deployment", api_version="apps/v1", name="web", namespace="default", uid="4f6a9c1e",
                replicas=replicas,
                resource_request={"cpu": 250, "memory": GIB // 2, "ephemeral-storage": GIB},
                has_replica_requirements=True, placement=Placement.model_validate(placement),
            )  # fmt: skip
            assert schedule(binding, snapshot, CONFIG).succeeded
            count, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < 1.0 or count < 3:
                schedule(binding, snapshot, CONFIG)
                count += 1
            print(
                f"| {n} | {label} | {replicas:,} | {count / elapsed:,.1f} | {1000 * elapsed / count:,.2f} |"
            )


if __name__ == "__main__":
    if "--batch" in sys.argv[1:]:
        main_batch()
    else:
        main()
