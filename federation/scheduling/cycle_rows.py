"""The rows of one attempt (``rows.Row``), shared by the bindings of a scheduler cycle through its memo.

``rows_for`` gives one row per cluster: without a memo each built for the binding (the reference), with one
in two layers. The memo (``memo.CycleMemo``) holds *listless* rows, the ones a binding whose own lists
(``previous``, ``eviction_clusters``) name no cluster gets: a cluster the binding's lists do not name reads
nothing of them, so the binding's own spec builds its listless row, and a view of the binding without its
lists builds the others (``rows.RowSpec.without_lists``, one per key for the cycle). The row of a cluster the
lists name is made from its listless row for this membership (``rows.with_lists``) and kept with it. A
listless row of a snapshot that differs from the cluster's earlier one in allocating alone is rebuilt from
the earlier one's (``rows.rebuilt``): only what reads the allocation is worked out again.

Invariants:
- Every row ``rows_for`` gives with a memo is the row it gives without one (property tests hold them equal):
  a listless row reads nothing of the binding but what the row key names; a member row differs from its
  listless row only in what the lists change; a rebuilt row only in what reads the allocation.
- What the memo stores is never the binding's own (the rows of the clusters its lists name are tailored per
  call, ``memo.CycleMemo.per_cluster(tailored=)``); what a listless row keeps of them is bounded
  (``MEMBER_ROWS``) and only ever what building them again would give.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from functools import partial
from typing import NamedTuple

from federation.scheduling import rows
from federation.scheduling.memo import CycleMemo
from federation.scheduling.placed import SharedEntries
from federation.scheduling.rows import Judge, Membership, Rejudge, Row, RowSpec
from federation.scheduling.types import BindingInput, ClusterSnapshot


class Judges(NamedTuple):
    """The filter runs a row's verdict comes from (the engine's, looked up when it is called)."""

    judge: Judge
    rejudge: Rejudge


# Member rows a listless row keeps (one per membership a binding gives its cluster), before starting again.
MEMBER_ROWS = 16


def memberships(binding: BindingInput) -> dict[str, Membership]:
    """The clusters whose rows read the binding's own lists, with what they read of them."""
    evicted = binding.eviction_clusters
    out = {name: (True, max(count, 0), name in evicted) for name, count in binding.previous.items()}
    for name in evicted:
        out.setdefault(name, (False, 0, True))
    return out


def rows_for(
    spec: RowSpec,
    clusters: Sequence[ClusterSnapshot],
    judges: Judges,
    shared: SharedEntries,
    memo: CycleMemo | None,
) -> list[Row]:
    """One row per cluster, in order, from ``memo`` when given; ``judges`` run the filters (the engine's).

    The memo holds the rows a binding whose own lists name no cluster gets (``_ListlessRows``); a cluster the
    binding's lists name gets its row from that one (``_member_row``)."""
    key = None if memo is None else spec.key(memo)
    if memo is None or key is None:
        build = partial(rows.build, spec, judges.judge, shared)
        return [build(cluster) for cluster in clusters]
    members = memberships(spec.binding)
    listless = _ListlessRows(spec, judges, shared, members, memo.table("listless-specs"), key)
    tailor = partial(_member_row, spec, judges.judge, shared, members)
    return memo.per_cluster(
        key, clusters, listless.build, rebase=listless.rebuild, tailored=members, tailor=tailor
    )


class _ListlessRows:
    """Rows as a binding whose lists name no cluster gets them: a cluster the binding's lists do not name is
    built with the binding's own spec (its lists are not read for it), one they name with a view of the
    binding without its lists (``rows.RowSpec.without_lists``). One view per key serves the cycle
    (``views``): a row reads nothing of a binding but what its key names, and the lists."""

    __slots__ = ("judges", "key", "members", "shared", "spec", "views")

    def __init__(
        self,
        spec: RowSpec,
        judges: Judges,
        shared: SharedEntries,
        members: Mapping[str, Membership],
        views: dict[Hashable, RowSpec],
        key: Hashable,
    ):
        self.spec = spec
        self.judges = judges
        self.shared = shared
        self.members = members
        self.views = views
        self.key = key

    def build(self, cluster: ClusterSnapshot) -> Row:
        return rows.build(self._spec_for(cluster), self.judges.judge, self.shared, cluster)

    def rebuild(self, cluster: ClusterSnapshot, before: Row) -> Row:
        return rows.rebuilt(self._spec_for(cluster), self.judges.rejudge, self.shared, cluster, before)

    def _spec_for(self, cluster: ClusterSnapshot) -> RowSpec:
        if cluster.name not in self.members:
            return self.spec
        view = self.views.get(self.key)
        if view is None:
            view = self.views[self.key] = self.spec.without_lists()
        return view


def _member_row(
    spec: RowSpec,
    judge: Judge,
    shared: SharedEntries,
    members: Mapping[str, Membership],
    cluster: ClusterSnapshot,
    listless: Row,
) -> Row:
    """The row of ``cluster``, which the binding's lists name, from ``listless``, its row for a binding whose
    lists do not: one per membership, kept with ``listless`` (at most ``MEMBER_ROWS``)."""
    membership = members[cluster.name]
    kept = listless.members
    row = None if kept is None else kept.get(membership)
    if row is None:
        row = rows.with_lists(spec, judge, shared, cluster, listless)
        if kept is None or len(kept) >= MEMBER_ROWS:
            kept = listless.members = {}
        kept[membership] = row
    return row
