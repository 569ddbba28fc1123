"""Replica division throughput: clusters x replicas, single core (``python bench/bench_division.py``).

Measures ``division.dynamic`` on a first schedule (Webster over each cluster's free capacity, uid
tie-break), which is the hot path of DynamicWeight; and ``webster_divide`` alone. Prints a markdown table.
"""

from __future__ import annotations

import random
import time

from federation.scheduling.division import Candidate, dynamic, webster_divide

CLUSTERS = (10, 100, 1000)
REPLICAS = (100, 1_000, 10_000, 100_000)


def rate(fn: object, budget: float = 0.5) -> float:
    """Calls per second of ``fn`` over roughly ``budget`` seconds."""
    call = fn  # type: ignore[assignment]
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < budget or count < 3:
        call()  # type: ignore[operator]
        count += 1
    return count / elapsed


def main() -> None:
    rnd = random.Random(42)
    print("| clusters | replicas | dynamic divisions/s | webster divisions/s | µs per division |")
    print("|---:|---:|---:|---:|---:|")
    for n in CLUSTERS:
        caps = [rnd.randint(50, 500) * 1000 for _ in range(n)]
        candidates = [Candidate(f"member{i:04d}", caps[i]) for i in range(n)]
        weights = {c.name: c.allocatable for c in candidates}
        for replicas in REPLICAS:
            dyn = rate(lambda: dynamic(replicas, candidates, {}, uid="4f6a9c1e"))  # noqa: B023
            web = rate(lambda: webster_divide(replicas, weights, "4f6a9c1e"))  # noqa: B023
            print(f"| {n} | {replicas:,} | {dyn:,.0f} | {web:,.0f} | {1e6 / dyn:,.0f} |")


if __name__ == "__main__":
    main()
