"""A memo of per-cluster results that the bindings of one scheduler cycle share (``engine.schedule(memo=)``).

Why: a cycle decides up to ~1,000 bindings over the same cluster snapshots, and most of what the engine works
out per cluster (filter verdicts, capacity estimates, resource scores) depends only on the snapshot and on a
few binding inputs that many bindings share (one placement policy, one resource request). Computing each
once per snapshot instead of once per binding is most of a cycle's engine time.

Use: the caller creates one ``CycleMemo`` per cycle, passes it to every ``schedule`` call of the cycle and
drops it after the cycle. ``schedule`` without a memo computes everything, as it always did.

Invariants:
- A result is reused only for the very snapshot object it was computed from (``is``, never equality), under
  a key holding every binding input the computation reads. Each key is built next to the code that reads
  those inputs (``filters.memo_key``, ``scores.score_clusters``, ``estimator.MemoizedGeneralEstimator``), so
  a change to what a plugin reads changes its key in the same place.
- Snapshots are immutable (``types``) and ``engine.assume`` builds a new one for every cluster that took
  replicas: a cluster whose capacity changed is a miss, the others stay hits.
- Results that depend on a cluster's name being in one of the binding's own lists (``previous``,
  ``eviction_clusters``) are never stored: the caller names those clusters as ``personal`` and they are
  computed for the binding alone; the ``avoid`` list is applied on top of stored verdicts, per binding.
  Nothing an extender answers is stored (a cluster with extender score parts is ``personal`` too).
- What is built from objects the memo hands out (the explanation's filter and score dicts, ``derived``) is
  shared by the cycle's results, so it is never mutated (``explain``).
- Memory is bounded whatever the batch size: one slot per cluster name holds the latest snapshot seen and its
  results, so a new snapshot of a cluster (after ``assume``) evicts the old one's; a slot holds at most
  ``SLOT_LIMIT`` results and a ``derived`` table ``TABLE_LIMIT`` entries (then they start again empty).
  The key numbering grows with the distinct keys of the cycle: a few per placement policy and request, at
  most a few per binding.
- Objects a key names by identity (the engine config) are pinned: the memo keeps them alive, so no other
  object can take their id while the memo lives.
- Not thread-safe: a cycle decides its bindings one after the other on one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Sequence
from typing import Any, TypeVar

from federation.scheduling.types import ClusterSnapshot

T = TypeVar("T")

# Entries per shared table (``derived``), and results per snapshot, before they start again empty: a bound
# on memory, not on correctness (a dropped result is computed again).
TABLE_LIMIT = 4096
SLOT_LIMIT = 64

_MISSING: Any = object()


class _Slot:
    """The results computed from one snapshot of one cluster, by key number."""

    __slots__ = ("results", "snapshot")

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.results: dict[int, Any] = {}


class CycleMemo:
    """Per-cluster results shared by the ``schedule`` calls of one scheduler cycle (see the module doc)."""

    __slots__ = ("_keys", "_pinned", "_slots", "_tables", "hits", "misses")

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        # Keys are numbered once per call: a slot looks up a small int, not a tuple of long strings.
        self._keys: dict[Hashable, int] = {}
        self._pinned: dict[int, object] = {}
        self._tables: dict[str, dict[int, tuple[Any, Any]]] = {}
        self.hits = 0  # results reused
        self.misses = 0  # results computed

    def pin(self, obj: object) -> int:
        """An identity key for ``obj``, valid for the memo's life (the memo keeps ``obj`` alive)."""
        self._pinned.setdefault(id(obj), obj)
        return id(obj)

    def per_cluster(
        self,
        key: Hashable,
        clusters: Sequence[ClusterSnapshot],
        compute: Callable[[ClusterSnapshot], T],
        personal: Collection[str] = (),
    ) -> list[T]:
        """``[compute(c) for c in clusters]``, taking each value computed before for the same snapshot object
        under ``key``; clusters named in ``personal`` are computed every time and never stored."""
        number = self._number(key)
        slots = self._slots
        out: list[T] = []
        hits = 0
        for cluster in clusters:
            if cluster.name in personal:
                out.append(compute(cluster))
                continue
            slot = slots.get(cluster.name)
            if slot is None or slot.snapshot is not cluster:  # first seen, or a new snapshot (after assume)
                slot = slots[cluster.name] = _Slot(cluster)
            elif len(slot.results) >= SLOT_LIMIT:
                slot.results.clear()
            results = slot.results
            value = results.get(number, _MISSING)
            if value is _MISSING:
                value = results[number] = compute(cluster)
            else:
                hits += 1
            out.append(value)
        self.hits += hits
        self.misses += len(out) - hits
        return out

    def one(self, key: Hashable, cluster: ClusterSnapshot, compute: Callable[[ClusterSnapshot], T]) -> T:
        """``compute(cluster)``, or the value computed before for the same snapshot object under ``key``."""
        return self.per_cluster(key, (cluster,), compute)[0]

    def derived(self, table: str, objects: Sequence[Any], compute: Callable[[Any], T]) -> list[T]:
        """``[compute(o) for o in objects]``, reusing each value for the very same object (held alive by the
        table) within the cycle: what is built from objects the memo hands out is built once."""
        entries = self._tables.setdefault(table, {})
        if len(entries) >= TABLE_LIMIT:
            entries.clear()
        out: list[T] = []
        for obj in objects:
            hit = entries.get(id(obj))
            if hit is not None and hit[0] is obj:
                out.append(hit[1])
            else:
                value = compute(obj)
                entries[id(obj)] = (obj, value)
                out.append(value)
        return out

    def _number(self, key: Hashable) -> int:
        number = self._keys.get(key)
        if number is None:
            number = self._keys[key] = len(self._keys)
        return number
