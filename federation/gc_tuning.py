"""CPython's cyclic garbage collector, tuned for a long-running process (`serve`, `up`, `agent`, `sim`).

Why: with CPython's default thresholds (a young collection every 700 net container allocations, a full
one every 100 young ones once the old generation has grown by a quarter) the collector took 7.9 of the
20.5 s of the rebalancer benchmark's timed part (``bench/bench_rebalance.py``: 5,538 collections, 36 of
them full at ~190 ms each). A controller pass allocates hundreds of thousands of dicts (decoded rows,
manifests, explanations) that live exactly as long as the pass: they outlive the young generations only
because the pass still holds them, and each full collection then scans the whole heap, the start-up heap
(modules, validation schemas, the ORM's mappers) included. A full collection holds the GIL, so the API
waits behind it too.

What ``tune`` does, once the process has started:
- ``gc.freeze()`` after one full collection: what start-up built lives as long as the process, and frozen
  objects are never scanned again (CPython's documented use of ``freeze``).
- ``gc.set_threshold(*thresholds)``: young collections every 50,000 allocations instead of 700, so a
  pass's short-lived objects are mostly gone (freed by reference counting) before any collection looks at
  them. Full collections still run, by CPython's own rule; the measured cost went from 7.9 s to 1.6 s
  (1.63 s with 55 young and no full collection in the same benchmark).

Memory: reference counting frees everything that is not in a cycle at once, whatever the thresholds; only
cyclic garbage waits longer (up to 50,000 allocations instead of 700).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

# Measured with bench/bench_rebalance.py (see bench/RESULTS.md); CPython's own default is (700, 10, 10).
DEFAULT_THRESHOLDS = (50_000, 20, 10)


def tune(thresholds: Sequence[int] = DEFAULT_THRESHOLDS, *, freeze: bool = True) -> None:
    """Set the collector's thresholds (empty: keep CPython's) and, with ``freeze``, move everything alive
    now out of its reach. Call once, when the process has started (its imports done, its app built)."""
    if freeze:
        gc.collect()  # garbage must not be frozen with the rest
        gc.freeze()
    if thresholds:
        gc.set_threshold(*thresholds)
