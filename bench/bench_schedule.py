"""Full ``engine.schedule`` of one binding (filters, scores, estimate, selection, division, explanation).

Scenarios over 100 and 1,000 clusters: DynamicWeight with every score plugin weighted, Duplicated, and
DynamicWeight with a cluster spread constraint. Prints a markdown table (single core).
"""

from __future__ import annotations

import random
import time

from federation.model.placement import Placement, Taint
from federation.scheduling.engine import schedule
from federation.scheduling.types import BindingInput, ClusterSnapshot, EngineConfig, Headroom

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
    main()
