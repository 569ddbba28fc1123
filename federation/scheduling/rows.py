"""What an attempt works out for one cluster alone, in one record (``Row``) that a cycle's bindings share.

A ``Row`` holds a cluster's filter verdict (and its explanation entry), the engine's own score parts, the
free memory MostFreeMemory compares, the general replica estimate and, for a cluster that passed, its
``Placed`` view: the cluster as selection and division see it (score, allocatable and available replicas,
overflow tier) with its explanation entries. ``rows_for`` gives one row per cluster, taken from the cycle's
memo (``memo.CycleMemo``) when one was made for the very same snapshot object under the same key.

What a row reads: its snapshot; the attempt's ``RowSpec`` (the binding as filtered and as scored, the
affinity term, the config, whose estimate counts), all named by ``RowSpec.key``; and the cluster's
``Membership`` in the binding's own lists (in ``previous`` and with how many replicas, in
``eviction_clusters``), its variant in the memo. Nothing else. What reads more is the binding's own, applied
per binding on top of the rows: the avoid list and extender filters (``rejudged``), extender score parts and
replica bounds, and MostFreeMemory's ``top``, the most free memory among the feasible clusters
(``placements``).

Invariants:
- A row, its ``Placed`` and their entry dicts are never changed once built: the results of a cycle share
  them. A row's cache of the last ``Placed`` it made for a binding's own ``top`` and estimate only ever holds
  what building it again would give.
- A binding that needs nothing of its own (no avoid list, no interested extender, no MostFreeMemory weight)
  takes every row's ``Placed`` as it is; its explanation shares every entry but those it marks with
  replicas, which are copies (``cluster_entries``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import cast

from federation.scheduling import estimator, explain, scores
from federation.scheduling.estimator import UNBOUNDED, clamp, general_max_replicas
from federation.scheduling.explain import Entry
from federation.scheduling.filters import FilterContext, FilterVerdict, memo_key
from federation.scheduling.fit import free_memory, relative_free_memory
from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import BindingInput, ClusterSnapshot

# In ``previous``, the replicas held there (never negative), in ``eviction_clusters``.
Membership = tuple[bool, int, bool]
Judge = Callable[[FilterContext, ClusterSnapshot], FilterVerdict]
Parts = Mapping[str, tuple[int, int]]


def memberships(binding: BindingInput) -> dict[str, Membership]:
    """The clusters whose rows read the binding's own lists, with what they read of them."""
    evicted = binding.eviction_clusters
    out = {name: (True, max(count, 0), name in evicted) for name, count in binding.previous.items()}
    for name in evicted:
        out.setdefault(name, (False, 0, True))
    return out


@dataclass(frozen=True, slots=True)
class RowSpec:
    """What the rows of one attempt read besides their snapshot and membership.

    ``ctx`` is the binding as filtered and estimated (``extenders_run.scheduler_view``), ``binding`` as scored
    (its whole request) and placed; ``own_estimate`` says the estimate is the engine's general estimator under
    the binding's profile (no estimators were given: given ones are asked per binding).
    """

    ctx: FilterContext
    binding: BindingInput
    own_estimate: bool
    weights: dict[str, int] = field(init=False)
    free_weighted: bool = field(init=False)

    def __post_init__(self) -> None:
        weights = scores.score_weights(self.binding, self.ctx.config)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "free_weighted", scores.FREE_MEMORY in weights)

    def key(self, memo: CycleMemo) -> Hashable | None:
        """Everything of the spec that a row reads, from the keys of the code that reads it; None when the
        filters' key cannot be made (then nothing is shared)."""
        config_id = memo.pin(self.ctx.config)
        filtered = memo_key(self.ctx, config_id)
        if filtered is None:
            return None
        return ("row", filtered, scores.memo_key(self.binding, config_id), self._estimate_key())

    def _estimate_key(self) -> Hashable:
        if not self.binding.is_workload:
            return ("replicas", self.binding.replicas)
        if not self.own_estimate:
            return None
        return estimator.memo_key(self.ctx.binding.resource_request, self.ctx.profile.headroom)


@dataclass(slots=True, eq=False)
class Placed:
    """A feasible cluster as selection (``spread.Ranked``) and division (``division.Divisible``) see it, with
    its explanation entry, unmarked and marked selected. Never changed once built (rows and results share
    it); not frozen only because a frozen one costs ~5x as much to build, and a busy cycle builds many."""

    name: str
    score: int
    available: int
    allocatable: int
    region: str
    overflow_order: int
    entry: Entry
    selected_entry: Entry
    rank: tuple[int, int, int, str] = field(init=False)

    def __post_init__(self) -> None:
        self.rank = (self.overflow_order, -self.score, -self.available, self.name)


class Row:
    """One cluster's work in one attempt (see the module doc). ``placed`` is None when the cluster failed a
    filter, or when its ``Placed`` reads more than the row (MostFreeMemory's ``top``; an estimate nothing
    bounded, which is the binding's replicas). A plain class, not a frozen dataclass: it is built for every
    new snapshot of a busy cycle, and it keeps the cache of ``placements``."""

    __slots__ = (
        "bare_entry",
        "estimate",
        "filter_entry",
        "free",
        "last",
        "name",
        "own",
        "parts",
        "passed",
        "placed",
        "snapshot",
        "verdict",
    )

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        verdict: FilterVerdict,
        shared: SharedEntries,
        own: int = 0,
        parts: Parts | None = None,
        free: int = 0,
        estimate: int = 0,
    ) -> None:
        self.snapshot = snapshot
        self.name = snapshot.name
        self.verdict = verdict
        self.passed = verdict.passed
        self.filter_entry, self.bare_entry = shared.verdict(verdict)
        self.own = own  # replicas the binding holds here: available = allocatable + own
        self.parts: Parts = parts or {}  # the engine's own score parts but MostFreeMemory
        self.free = free  # MostFreeMemory's measure, when it is weighted
        self.estimate = estimate  # the bound on extra replicas (UNBOUNDED: none yet)
        self.placed: Placed | None = None
        self.last: tuple[int, int, Placed] | None = None  # placements' (top, allocatable, Placed)


class SharedEntries:
    """The explanation's dicts that many clusters have equal (a verdict's filter part and bare entry, a score
    part): one object per distinct value within the cycle (with a memo) or the attempt, which keeps the
    explanations compact (``explain``) and spares building them again."""

    __slots__ = ("_filters", "_scores")

    def __init__(self, memo: CycleMemo | None) -> None:
        self._filters = {} if memo is None else memo.table("explain-filters")
        self._scores = {} if memo is None else memo.table("explain-scores")

    def verdict(self, verdict: FilterVerdict) -> tuple[Entry, Entry]:
        """The verdict's filter part and the bare entry holding it."""
        key = (verdict.plugin, verdict.reason, verdict.failures)
        pair: tuple[Entry, Entry] | None = self._filters.get(key)
        if pair is None:
            part = explain.filter_entry(verdict)
            pair = self._filters[key] = (part, explain.bare_entry(part))
        return pair

    def scores(self, parts: Parts) -> Entry:
        key = tuple(parts.items())
        entry: Entry | None = self._scores.get(key)
        if entry is None:
            entry = self._scores[key] = explain.score_entry(parts)
        return entry


def rows_for(
    spec: RowSpec,
    clusters: Sequence[ClusterSnapshot],
    judge: Judge,
    shared: SharedEntries,
    memo: CycleMemo | None,
) -> list[Row]:
    """One row per cluster, in order, from ``memo`` when given; ``judge`` runs the filters (the engine's)."""
    build = partial(_build, spec, judge, shared)
    key = None if memo is None else spec.key(memo)
    if memo is None or key is None:
        return [build(cluster) for cluster in clusters]
    return memo.per_cluster(key, clusters, build, variants=memberships(spec.binding))


def _build(spec: RowSpec, judge: Judge, shared: SharedEntries, cluster: ClusterSnapshot) -> Row:
    verdict = judge(spec.ctx, cluster)
    if not verdict.passed:
        return Row(cluster, verdict, shared)
    binding, headroom = spec.binding, spec.ctx.profile.headroom
    parts = scores.own_parts(binding, cluster, spec.weights, headroom)
    free = free_memory(cluster, binding.resource_request, headroom) if spec.free_weighted else 0
    own = max(binding.previous.get(cluster.name, 0), 0)
    row = Row(cluster, verdict, shared, own, parts, free, _estimate(spec, cluster))
    if not spec.free_weighted and row.estimate != UNBOUNDED:
        row.placed = _place(row, parts, row.estimate, shared)
    return row


def _estimate(spec: RowSpec, cluster: ClusterSnapshot) -> int:
    """Karmada's general estimate for workloads (non-workloads take their replicas everywhere)."""
    binding = spec.binding
    if not binding.is_workload:
        return binding.replicas
    if not spec.own_estimate:
        return UNBOUNDED
    return general_max_replicas(cluster, spec.ctx.binding.resource_request, spec.ctx.profile.headroom)


def _place(row: Row, parts: Parts, allocatable: int, shared: SharedEntries) -> Placed:
    total = scores.total(parts)
    available = allocatable + row.own
    entry = explain.placed_entry(row.filter_entry, shared.scores(parts), total, allocatable, available)
    region, tier = row.snapshot.region, row.verdict.overflow_order
    selected = explain.marked(entry, selected=True)
    return Placed(row.name, total, available, allocatable, region, tier, entry, selected)


def rejudged(row: Row, verdict: FilterVerdict, shared: SharedEntries) -> Row:
    """``row`` failed by a verdict of the binding's own (avoid list, extender): that binding's row alone."""
    assert not verdict.passed, "only a filter of the binding's own fails a cluster on top of the rows"
    return Row(row.snapshot, verdict, shared)


def placements(
    spec: RowSpec,
    feasible: Sequence[Row],
    bounds: Mapping[str, int] | None,
    extra: Mapping[str, Parts],
    shared: SharedEntries,
) -> list[Placed]:
    """The feasible rows' ``Placed`` for this binding. ``bounds``: the binding's own bounds on the rows'
    estimates (given estimators, extenders); ``extra``: extender score parts per cluster."""
    if bounds is None and not extra and not spec.free_weighted:
        placed = [row.placed for row in feasible]
        if None not in placed:
            return cast(list[Placed], placed)
    top = max((row.free for row in feasible), default=0) if spec.free_weighted else 0
    replicas = spec.binding.replicas
    return [_placed_for(spec, row, top, bounds, extra.get(row.name), replicas, shared) for row in feasible]


def _placed_for(
    spec: RowSpec,
    row: Row,
    top: int,
    bounds: Mapping[str, int] | None,
    extra: Parts | None,
    replicas: int,
    shared: SharedEntries,
) -> Placed:
    bound = row.estimate if bounds is None else min(row.estimate, bounds.get(row.name, UNBOUNDED))
    allocatable = clamp(bound, replicas)
    if not extra:
        kept, last = row.placed, row.last  # ``placed`` is there only when ``top`` is not read
        if kept is not None and kept.allocatable == allocatable:
            return kept
        if last is not None and last[0] == top and last[1] == allocatable:
            return last[2]
    parts = row.parts
    if spec.free_weighted:
        parts = scores.with_free_memory(parts, relative_free_memory(row.free, top), spec.weights)
    if extra:  # extender parts are the binding's own: never kept
        return _place(row, {**parts, **extra}, allocatable, shared)
    placed = _place(row, parts, allocatable, shared)
    row.last = (top, allocatable, placed)
    return placed


def cluster_entries(
    rows: Sequence[Row],
    placed: Sequence[Placed] = (),
    selected: Sequence[Placed] = (),
    replicas: Mapping[str, int] | None = None,
) -> dict[str, Entry]:
    """The explanation's per-cluster entries in cluster order: a row's bare entry, a feasible cluster's
    placed entry, a selected one's selected entry, each shared; a copy only where replicas are marked."""
    entries = {row.name: row.bare_entry for row in rows}
    if len(selected) < len(placed):
        entries.update({p.name: p.entry for p in placed})
    entries.update({p.name: p.selected_entry for p in selected})
    for name, count in (replicas or {}).items():
        if count and name in entries:
            entries[name] = explain.marked(entries[name], replicas=count)
    return entries
