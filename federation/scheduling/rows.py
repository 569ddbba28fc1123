"""What an attempt works out for one cluster alone, in one record (``Row``) that a cycle's bindings share.

A ``Row`` holds a cluster's filter verdict (and its explanation entry), the engine's own score parts, the
free memory MostFreeMemory compares, the general replica estimate and, for a cluster that passed, its
``Placed`` view: the cluster as selection and division see it (score, allocatable and available replicas,
overflow tier) with its explanation entries. ``build`` makes one from scratch; ``rebuilt`` makes one for a
snapshot new in allocating alone from the row of the earlier snapshot, ``with_lists`` one for a cluster the
binding's lists name from its row without them (``cycle_rows`` shares rows through the cycle's memo).

What a row reads: its snapshot; the attempt's ``RowSpec`` (the binding as filtered and as scored, the
affinity term, the config, whose estimate counts), all named by ``RowSpec.key``; and the cluster's
``Membership`` in the binding's own lists (in ``previous`` and with how many replicas, in
``eviction_clusters``). Nothing else. What reads more is the binding's own, applied per binding on top of
the rows: the avoid list and extender filters (``rejudged``), extender score parts and replica bounds, and
MostFreeMemory's ``top``, the most free memory among the feasible clusters (``placements``).

Invariants:
- A row, its ``Placed`` and their entry dicts are never changed once built: the results of a cycle share
  them. A row's caches (the last ``Placed`` it made for a binding's own ``top`` and estimate, its member
  rows) only ever hold what building them again would give.
- A rebuilt row is the row built from scratch: what it takes over reads no allocation (what does is named by
  ``filters.READS_ALLOCATION`` and ``scores.READS_ALLOCATION``, besides the estimate and the free memory),
  and ``ClusterSnapshot.same_but_allocating`` holds everything else of the two snapshots equal. A row made
  ``with_lists`` is the row built with them: the lists change the verdict, the ClusterLocality part and the
  replicas held, never the estimate or the free memory.
- A binding that needs nothing of its own (no avoid list, no interested extender, no MostFreeMemory weight)
  takes every row's ``Placed`` as it is; its explanation shares every entry but those it marks with
  replicas, which are copies (``placed.cluster_entries``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from federation.scheduling import estimator, scores
from federation.scheduling.estimator import UNBOUNDED, clamp, general_max_replicas
from federation.scheduling.explain import Entry
from federation.scheduling.filters import FilterContext, FilterVerdict, memo_key
from federation.scheduling.fit import free_memory, relative_free_memory
from federation.scheduling.memo import CycleMemo
from federation.scheduling.placed import Parts, Placed, SharedEntries
from federation.scheduling.types import BindingInput, ClusterSnapshot

# In ``previous``, the replicas held there (never negative), in ``eviction_clusters``.
Membership = tuple[bool, int, bool]
Judge = Callable[[FilterContext, ClusterSnapshot], FilterVerdict]
# ``filters.rerun_filters``: the verdict for a snapshot from the verdict for an earlier one of the cluster.
Rejudge = Callable[[FilterContext, ClusterSnapshot, FilterVerdict], FilterVerdict]


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
    parts_read_allocation: bool = field(init=False)
    fixed_estimate: int | None = field(init=False)

    def __post_init__(self) -> None:
        weights = scores.score_weights(self.binding, self.ctx.config)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "free_weighted", scores.FREE_MEMORY in weights)
        object.__setattr__(self, "parts_read_allocation", scores.own_parts_read_allocation(weights))
        object.__setattr__(self, "fixed_estimate", self._fixed_estimate())

    def _fixed_estimate(self) -> int | None:
        """The estimate of every cluster when it reads none (non-workloads take their replicas everywhere;
        given estimators are asked per binding: ``UNBOUNDED`` until then); None when it does."""
        if not self.binding.is_workload:
            return self.binding.replicas
        return None if self.own_estimate else UNBOUNDED

    def key(self, memo: CycleMemo) -> Hashable | None:
        """Everything of the spec that a row reads, from the keys of the code that reads it; None when the
        filters' key cannot be made (then nothing is shared)."""
        config_id = memo.pin(self.ctx.config)
        filtered = memo_key(self.ctx, config_id)
        if filtered is None:
            return None
        return ("row", filtered, scores.memo_key(self.binding, config_id), self._estimate_key())

    def without_lists(self) -> RowSpec:
        """This spec for the binding with empty lists of its own (``previous``, ``eviction_clusters``): the
        rows a binding whose lists name no cluster gets, which the memo shares (``cycle_rows``)."""
        binding = replace(self.binding, previous={}, eviction_clusters=frozenset())
        seen = self.ctx.binding
        filtered = (
            binding if seen is self.binding else replace(seen, previous={}, eviction_clusters=frozenset())
        )
        return RowSpec(replace(self.ctx, binding=filtered), binding, self.own_estimate)

    def _estimate_key(self) -> Hashable:
        if not self.binding.is_workload:
            return ("replicas", self.binding.replicas)
        if not self.own_estimate:
            return None
        return estimator.memo_key(self.ctx.binding.resource_request, self.ctx.profile.headroom)


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
        "members",
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
        entries: tuple[Entry, Entry],
        own: int = 0,
        parts: Parts | None = None,
        free: int = 0,
        estimate: int = 0,
    ) -> None:
        self.snapshot = snapshot
        self.name = snapshot.name
        self.verdict = verdict
        self.passed = verdict.passed
        self.filter_entry, self.bare_entry = entries  # the verdict's (``SharedEntries.verdict``)
        self.own = own  # replicas the binding holds here: available = allocatable + own
        self.parts: Parts = parts or {}  # the engine's own score parts but MostFreeMemory
        self.free = free  # MostFreeMemory's measure, when it is weighted
        self.estimate = estimate  # the bound on extra replicas (UNBOUNDED: none yet)
        self.placed: Placed | None = None
        self.last: tuple[int, int, Placed] | None = None  # placements' (top, allocatable, Placed)
        self.members: dict[Membership, Row] | None = None  # ``cycle_rows``' member rows made from it


def with_lists(
    spec: RowSpec, judge: Judge, shared: SharedEntries, cluster: ClusterSnapshot, listless: Row
) -> Row:
    """``build`` for a cluster the binding's lists name, given its row without them: the lists change the
    verdict (``previous`` lets a cluster pass, ``eviction_clusters`` fails it), the ClusterLocality part and
    the replicas held, never the estimate or the free memory, which are taken over when worked out."""
    verdict = judge(spec.ctx, cluster)
    entries = shared.verdict(verdict)
    if not verdict.passed:
        return Row(cluster, verdict, entries)
    own = max(spec.binding.previous.get(cluster.name, 0), 0)
    known = (listless.free, listless.estimate) if listless.passed else None
    return _passed(spec, shared, cluster, verdict, entries, own, _own_parts(spec, cluster), known=known)


def build(spec: RowSpec, judge: Judge, shared: SharedEntries, cluster: ClusterSnapshot) -> Row:
    verdict = judge(spec.ctx, cluster)
    entries = shared.verdict(verdict)
    if not verdict.passed:
        return Row(cluster, verdict, entries)
    own = max(spec.binding.previous.get(cluster.name, 0), 0)
    return _passed(spec, shared, cluster, verdict, entries, own, _own_parts(spec, cluster))


def rebuilt(
    spec: RowSpec, rejudge: Rejudge, shared: SharedEntries, cluster: ClusterSnapshot, before: Row
) -> Row:
    """The row ``build`` gives ``cluster``, from ``before``: the row under the same key and membership of an
    earlier snapshot of the cluster that differs from ``cluster`` in allocating alone (``memo``). What reads
    no allocation is taken from ``before`` (the other filters' verdicts, the membership, the score parts
    that read none); the rest is worked out again (``filters.READS_ALLOCATION``, estimate, free memory)."""
    verdict = rejudge(spec.ctx, cluster, before.verdict)
    same = verdict is before.verdict
    entries = (before.filter_entry, before.bare_entry) if same else shared.verdict(verdict)
    if not verdict.passed:
        return Row(cluster, verdict, entries)
    if before.passed and not spec.parts_read_allocation:
        earlier = before.placed if same else None  # its entries hold the same verdict and parts
        return _passed(spec, shared, cluster, verdict, entries, before.own, before.parts, earlier)
    return _passed(spec, shared, cluster, verdict, entries, before.own, _own_parts(spec, cluster))


def _own_parts(spec: RowSpec, cluster: ClusterSnapshot) -> Parts:
    return scores.own_parts(spec.binding, cluster, spec.weights, spec.ctx.profile.headroom)


def _passed(
    spec: RowSpec,
    shared: SharedEntries,
    cluster: ClusterSnapshot,
    verdict: FilterVerdict,
    entries: tuple[Entry, Entry],
    own: int,
    parts: Parts,
    earlier: Placed | None = None,
    known: tuple[int, int] | None = None,
) -> Row:
    """The row of a cluster that passed the filters. ``earlier``: the ``Placed`` of an earlier snapshot with
    the same verdict, parts and membership, taken again when its allocatable replicas are this one's;
    ``known``: the free memory and estimate, already worked out for this snapshot."""
    if known is None:
        headroom = spec.ctx.profile.headroom
        free = free_memory(cluster, spec.binding.resource_request, headroom) if spec.free_weighted else 0
        known = (free, _estimate(spec, cluster))
    row = Row(cluster, verdict, entries, own, parts, *known)
    if spec.free_weighted or row.estimate == UNBOUNDED:  # its Placed reads more than the row
        return row
    if earlier is not None and earlier.allocatable == row.estimate:
        row.placed = earlier
    else:
        row.placed = _place(row, parts, row.estimate, shared, earlier)
    return row


def _estimate(spec: RowSpec, cluster: ClusterSnapshot) -> int:
    """Karmada's general estimate for workloads under the binding's profile (``RowSpec.fixed_estimate``)."""
    fixed = spec.fixed_estimate
    if fixed is not None:
        return fixed
    return general_max_replicas(cluster, spec.ctx.binding.resource_request, spec.ctx.profile.headroom)


def _place(
    row: Row, parts: Parts, allocatable: int, shared: SharedEntries, like: Placed | None = None
) -> Placed:
    """The row's ``Placed`` with ``allocatable`` replicas; ``like``: one with the same parts and membership
    (an earlier snapshot's), whose score and score part are taken over."""
    if like is None:
        score, score_part = scores.total(parts), shared.scores(parts)
    else:
        score, score_part = like.score, like.score_part
    available = allocatable + row.own
    region, tier = row.snapshot.region, row.verdict.overflow_order
    return Placed(row.name, score, available, allocatable, region, tier, row.filter_entry, score_part)


def rejudged(row: Row, verdict: FilterVerdict, shared: SharedEntries) -> Row:
    """``row`` failed by a verdict of the binding's own (avoid list, extender): that binding's row alone."""
    assert not verdict.passed, "only a filter of the binding's own fails a cluster on top of the rows"
    return Row(row.snapshot, verdict, shared.verdict(verdict))


def placements(
    spec: RowSpec,
    rows: Sequence[Row],
    bounds: Mapping[str, int] | None,
    extra: Mapping[str, Parts],
    shared: SharedEntries,
) -> list[Placed]:
    """The ``Placed`` of the rows that passed the filters, for this binding, in row order. ``bounds``: the
    binding's own bounds on the rows' estimates (given estimators, extenders); ``extra``: extender score
    parts per cluster."""
    replicas = spec.binding.replicas
    if bounds is None and not extra and not spec.free_weighted:
        # Each row's own, but where its estimate was unbounded (then its Placed reads the replicas).
        return [
            row.placed or _placed_for(spec, row, 0, bounds, None, replicas, shared)
            for row in rows
            if row.passed
        ]
    top = max((row.free for row in rows if row.passed), default=0) if spec.free_weighted else 0
    return [
        _placed_for(spec, row, top, bounds, extra.get(row.name), replicas, shared)
        for row in rows
        if row.passed
    ]


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
