"""Human-readable scheduling messages in Karmada's (kube-scheduler's) wording.

Invariant: ``no_cluster_fit`` reproduces ``framework.FitError.Error()``: ``0/N clusters are available: `` then
``"<count> <reason>"`` per distinct reason, sorted as strings, joined by ``", "``, and a final period;
``no cluster exists`` when there are no clusters at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def no_cluster_fit(total: int, reasons: Iterable[str]) -> str:
    """``0/5 clusters are available: 2 cluster(s) had untolerated taint {...}, 3 cluster(s) did not ...``."""
    histogram = Counter(reasons)
    if total == 0 or not histogram:
        return f"0/{total} clusters are available: no cluster exists."
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    return f"0/{total} clusters are available: {', '.join(parts)}."


def partial_placement(placed: int, wanted: int, why: str) -> str:
    return f"{placed}/{wanted} replicas placed, {wanted - placed} unplaced: {why}."
