"""A memo of per-cluster results that the bindings of one scheduler cycle share (``engine.schedule(memo=)``).

Why: a cycle decides up to ~1,000 bindings over the same cluster snapshots, and most of what the engine works
out per cluster (filter verdict, scores, capacity estimate, explanation entries: a ``rows.Row``) depends only
on the snapshot and on a few binding inputs that many bindings share (one placement policy, one resource
request). Computing each once per snapshot instead of once per binding is most of a cycle's engine time.

Use: the caller creates one ``CycleMemo`` per cycle, passes it to every ``schedule`` call of the cycle and
drops it after the cycle. ``schedule`` without a memo computes everything, as it always did.

Invariants:
- A result is reused only for the very snapshot object it was computed from (``is``, never equality), under
  a key holding every binding input the computation reads. Each key is built next to the code that reads
  those inputs (``filters.memo_key``, ``scores.memo_key``, ``estimator.memo_key``, put together by
  ``rows.RowSpec.key``), so a change to what a plugin reads changes its key in the same place.
- Snapshots are immutable (``types``) and ``engine.assume`` builds a new one for every cluster that took
  replicas: a cluster whose capacity changed is a miss, the others stay hits.
- A miss may be *rebased*: when a cluster's new snapshot differs from the one its slot held in ``allocating``
  alone (``ClusterSnapshot.same_but_allocating``, which is what ``assume`` makes), the slot keeps the old
  results as ``earlier`` ones, and a call given ``rebase`` works a missing value out from the earlier value
  of the same key and variant instead of from scratch (``rows.rebuilt`` keeps what reads no allocation).
  An earlier value is never handed out itself; any other change of a snapshot drops the earlier values.
- What a result reads of the caller's own lists for one cluster (whether it is in the binding's
  ``previous``, with how many replicas, in ``eviction_clusters``: ``cycle_rows.memberships``) is that
  cluster's *variant*: the result is stored under the key and the variant, and shared only with calls that
  give the cluster the same variant. Clusters named ``personal`` are computed for the call alone and never
  stored. Clusters named ``tailored`` get the call's own value, made by ``tailor`` from the key's value,
  which is what is stored (``cycle_rows`` stores the rows of a binding whose lists name no cluster, and
  tailors the rows of the clusters a binding's lists name: it needs no variants). What reads more of the
  binding (the ``avoid`` list, whatever an extender answers) is never stored: the engine applies it per
  binding, on top of the stored rows.
- Consecutive calls of one key mostly see the same list again, less the few clusters ``assume`` replaced and
  the ones with a variant: each key keeps its last call's clusters and stored values by position
  (``_Vector``), and a call compares its list with them position by position (identity, in C) and looks up
  only the positions whose cluster changed or that had a variant or were personal, in this call or the
  last one. The vector is a shortcut to values the slots hold or held for the same snapshot object and key,
  nothing more.
- Values handed out are shared by the cycle's results, so they are never mutated (``rows``, ``explain``).
- Memory is bounded whatever the batch size: one slot per cluster name holds the latest snapshot seen and its
  results, so a new snapshot of a cluster (after ``assume``) evicts the old one's but for the earlier values
  a rebase reads; a slot holds at most ``SLOT_LIMIT`` results and twice that many earlier ones, a ``table``
  ``TABLE_LIMIT`` entries and the memo ``VECTOR_LIMIT`` vectors (then they start again empty). The key
  numbering grows with the distinct keys of the cycle: a few per placement policy and request, and a few
  variants per binding that gives any.
- Objects a key names by identity (the engine config) are pinned: the memo keeps them alive, so no other
  object can take their id while the memo lives.
- Not thread-safe: a cycle decides its bindings one after the other on one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from itertools import compress
from operator import is_not
from typing import Any, TypeVar

from federation.scheduling.types import ClusterSnapshot

T = TypeVar("T")

# Entries per shared table, results per snapshot and vectors (one per key), before they start again empty:
# a bound on memory, not on correctness (a dropped result is computed again).
TABLE_LIMIT = 4096
SLOT_LIMIT = 64
VECTOR_LIMIT = 256

_MISSING: Any = object()
# Heads the key of a variant (``(_VARIANT, key number, variant)``): no caller's key can hold it.
_VARIANT: Any = object()


class _Slot:
    """The results computed from one snapshot of one cluster, by key number, and ``earlier``: the results of
    the cluster's earlier snapshots that differ from this one in ``allocating`` alone, for ``rebase`` (the
    latest one's for a key when several had one)."""

    __slots__ = ("earlier", "results", "snapshot")

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.results: dict[int, Any] = {}
        self.earlier: dict[int, Any] = {}

    def advance(self, snapshot: ClusterSnapshot) -> None:
        """Make this the slot of ``snapshot``, a new snapshot of its cluster: its results become earlier ones
        when ``snapshot`` differs from the slot's in ``allocating`` alone (``engine.assume``), else go. In
        place: nothing but the memo holds a slot, and ``assume`` moves a few of them every binding."""
        if self.snapshot.same_but_allocating(snapshot):
            if len(self.earlier) >= SLOT_LIMIT:  # bounded: SLOT_LIMIT before, as many results added
                self.earlier.clear()
            self.earlier.update(self.results)
        else:
            self.earlier = {}
        self.snapshot = snapshot
        self.results = {}


class _Vector:
    """One key's last call: its clusters and values by position, the positions whose value was a variant's
    or personal (not the key's own), and where each cluster name stands (None: a name came twice)."""

    __slots__ = ("clusters", "index", "own", "values")

    def __init__(
        self, clusters: list[ClusterSnapshot], values: list[Any], own: set[int], index: dict[str, int] | None
    ) -> None:
        self.clusters = clusters
        self.values = values
        self.own = own
        self.index = index

    def stale(self, clusters: list[ClusterSnapshot]) -> set[int] | None:
        """The positions where ``clusters`` holds another snapshot than the last call; None when the two
        lists do not line up (another length or order, a name twice), so nothing can be taken by position.
        A new snapshot of a cluster keeps its name and place in the list (``assume``)."""
        last = self.clusters
        if self.index is None or len(last) != len(clusters):
            return None
        changed = set(compress(range(len(clusters)), map(is_not, clusters, last)))
        if [clusters[i].name for i in changed] != [last[i].name for i in changed]:
            return None
        return changed


def _tailored(
    clusters: list[ClusterSnapshot],
    values: list[T],
    index: dict[str, int] | None,
    names: Collection[str],
    tailor: Callable[[ClusterSnapshot, T], T],
) -> list[T]:
    """``values`` with the ones of the clusters named in ``names`` tailored (``per_cluster``), a new list."""
    out = list(values)
    if index is None:  # a name came twice: each of its places
        positions = [i for i, cluster in enumerate(clusters) if cluster.name in names]
    else:
        positions = [index[name] for name in names if name in index]
    for position in positions:
        out[position] = tailor(clusters[position], values[position])
    return out


def _index(clusters: Sequence[ClusterSnapshot]) -> dict[str, int] | None:
    index = {c.name: i for i, c in enumerate(clusters)}
    return index if len(index) == len(clusters) else None


class CycleMemo:
    """Per-cluster results shared by the ``schedule`` calls of one scheduler cycle (see the module doc)."""

    __slots__ = ("_keys", "_pinned", "_slots", "_tables", "_vectors", "hits", "misses", "rebased")

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        # Keys are numbered once per call: a slot looks up a small int, not a tuple of long strings.
        self._keys: dict[Hashable, int] = {}
        self._pinned: dict[int, object] = {}
        self._tables: dict[str, dict[Hashable, Any]] = {}
        self._vectors: dict[int, _Vector] = {}
        self.hits = 0  # results reused
        self.misses = 0  # results computed (or rebased)
        self.rebased = 0  # results worked out from an earlier snapshot's (``rebase``)

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
        variants: Mapping[str, Hashable] | None = None,
        rebase: Callable[[ClusterSnapshot, T], T] | None = None,
        tailored: Collection[str] = (),
        tailor: Callable[[ClusterSnapshot, T], T] | None = None,
    ) -> list[T]:
        """``[compute(c) for c in clusters]``, taking each value computed before for the same snapshot object
        under ``key``; clusters named in ``personal`` are computed every time and never stored, and a cluster
        named in ``variants`` is stored under ``key`` and its variant (what ``compute`` reads of the caller's
        own lists for that cluster), so it is shared only with calls that give it the same variant.

        ``rebase(cluster, earlier)``, when given, works a value out from ``earlier``, the value under the same
        key and variant for an earlier snapshot of the cluster that differs from ``cluster`` in ``allocating``
        alone; it must give what ``compute(cluster)`` gives (``rows.rebuilt`` keeps what reads no allocation).

        A cluster named in ``tailored`` gets ``tailor(cluster, value)`` in the answer, the call's own, made
        from its value under ``key`` (which is what is stored and kept for later calls)."""
        number = self._number(key)
        numbers = {n: self._number((_VARIANT, number, v)) for n, v in variants.items()} if variants else {}
        listed = list(clusters)
        vector = self._vectors.get(number)
        stale = None if vector is None else vector.stale(listed)
        positions: Collection[int]
        if vector is None or vector.index is None or stale is None:
            out: list[Any] = [None] * len(listed)
            positions, index = range(len(listed)), _index(listed)
        else:  # the last call's values, but where its cluster, variant or personal value is not this one's
            out, index = list(vector.values), vector.index
            named = [index[n] for names in (numbers, personal) for n in names if n in index]
            positions = stale.union(vector.own, named)
        own = self._look_up(number, numbers, personal, listed, positions, compute, rebase, out)
        self.hits += len(listed) - len(positions)
        if len(self._vectors) >= VECTOR_LIMIT and number not in self._vectors:
            self._vectors.clear()
        self._vectors[number] = _Vector(listed, out, own, index)
        if not tailored or tailor is None:
            return out
        return _tailored(listed, out, index, tailored, tailor)

    def _look_up(
        self,
        number: int,
        numbers: Mapping[str, int],
        personal: Collection[str],
        clusters: list[ClusterSnapshot],
        positions: Collection[int],
        compute: Callable[[ClusterSnapshot], Any],
        rebase: Callable[[ClusterSnapshot, Any], Any] | None,
        out: list[Any],
    ) -> set[int]:
        """Fill ``out`` at ``positions`` from the slots (working out what is missing); the positions whose
        value is not the key's own (a variant's, or personal)."""
        slots = self._slots
        own: set[int] = set()
        computed = rebased = 0
        for position in positions:
            cluster = clusters[position]
            name = cluster.name
            if name in personal:
                out[position] = compute(cluster)
                own.add(position)
                computed += 1
                continue
            slot = slots.get(name)
            if slot is None:
                slot = slots[name] = _Slot(cluster)
            elif slot.snapshot is not cluster:  # a new snapshot (after assume, or of a changed cluster)
                slot.advance(cluster)
            elif len(slot.results) >= SLOT_LIMIT:
                slot.results.clear()
            wanted = numbers.get(name, number)
            if wanted != number:
                own.add(position)
            value = slot.results.get(wanted, _MISSING)
            if value is _MISSING:
                earlier = slot.earlier.get(wanted, _MISSING)
                if rebase is None or earlier is _MISSING:
                    value = compute(cluster)
                    computed += 1
                else:
                    value = rebase(cluster, earlier)
                    rebased += 1
                slot.results[wanted] = value
            out[position] = value
        self.hits += len(positions) - computed - rebased
        self.misses += computed + rebased
        self.rebased += rebased
        return own

    def table(self, name: str) -> dict[Hashable, Any]:
        """The cycle's table ``name`` of values keyed by what they are made from (equal inputs, one object:
        what the cycle's results share, e.g. the explanation's dicts); it starts again empty past
        ``TABLE_LIMIT``."""
        entries = self._tables.setdefault(name, {})
        if len(entries) >= TABLE_LIMIT:
            entries.clear()
        return entries

    def _number(self, key: Hashable) -> int:
        number = self._keys.get(key)
        if number is None:
            number = self._keys[key] = len(self._keys)
        return number
