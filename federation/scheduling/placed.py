"""A feasible cluster as selection, division and the explanation see it (``Placed``), the explanation's dicts
the results of a cycle share (``SharedEntries``), and the explanation's per-cluster entries
(``cluster_entries``).

Invariants:
- A ``Placed`` is never changed once built (rows and results share it), but for its unmarked entry, made the
  first time it is asked for and the same from then on.
- Equal filter and score parts are one dict within the cycle (with a memo) or the attempt
  (``SharedEntries``), and nothing changes an entry once built: a binding's marks (selected, replicas) go
  into copies (``explain.marked``).
- ``cluster_entries`` lists every cluster in row order, whichever way it builds the dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from federation.scheduling import explain
from federation.scheduling.explain import Entry
from federation.scheduling.filters import FilterVerdict
from federation.scheduling.memo import CycleMemo

Parts = Mapping[str, tuple[int, int]]


class Judged(Protocol):
    """A cluster's row as its explanation entry reads it (``rows.Row``)."""

    @property
    def name(self) -> str: ...

    @property
    def bare_entry(self) -> Entry: ...


class Placed:
    """A feasible cluster as selection (``spread.Ranked``) and division (``division.Divisible``) see it, with
    its explanation entry marked selected, and unmarked (made when first asked for: only a binding that
    selects fewer clusters than it places needs it). Never changed once built, but for that one entry (rows
    and results share it). A plain class: a busy cycle builds many."""

    __slots__ = (
        "_entry",
        "allocatable",
        "available",
        "filter_part",
        "name",
        "overflow_order",
        "rank",
        "region",
        "score",
        "score_part",
        "selected_entry",
    )

    def __init__(
        self,
        name: str,
        score: int,
        available: int,
        allocatable: int,
        region: str,
        overflow_order: int,
        filter_part: Entry,
        score_part: Entry,
    ) -> None:
        self.name = name
        self.score = score
        self.available = available
        self.allocatable = allocatable
        self.region = region
        self.overflow_order = overflow_order
        self.filter_part = filter_part
        self.score_part = score_part
        self.rank = (overflow_order, -score, -available, name)
        self.selected_entry = explain.placed_entry(
            filter_part, score_part, score, allocatable, available, selected=True
        )
        self._entry: Entry | None = None

    @property
    def entry(self) -> Entry:
        """The entry unmarked (not selected)."""
        if self._entry is None:
            self._entry = explain.marked(self.selected_entry, selected=False)
        return self._entry


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


def cluster_entries(
    rows: Sequence[Judged],
    placed: Sequence[Placed] = (),
    selected: Sequence[Placed] = (),
    replicas: Mapping[str, int] | None = None,
) -> dict[str, Entry]:
    """The explanation's per-cluster entries in cluster order: a row's bare entry, a feasible cluster's
    placed entry, a selected one's selected entry, each shared; a copy only where replicas are marked."""
    entries = _everyone_selected(rows, placed, selected)
    if entries is None:
        entries = {row.name: row.bare_entry for row in rows}
        if len(selected) < len(placed):
            entries.update({p.name: p.entry for p in placed})
        entries.update({p.name: p.selected_entry for p in selected})
    for name, count in (replicas or {}).items():
        if count and name in entries:
            entries[name] = explain.marked(entries[name], replicas=count)
    return entries


def _everyone_selected(
    rows: Sequence[Judged], placed: Sequence[Placed], selected: Sequence[Placed]
) -> dict[str, Entry] | None:
    """The entries when every cluster was selected (the usual case without spread constraints): ``placed``
    then holds every row, in row order, and each one's entry is its selected one; None otherwise, or when a
    name came twice (then the general way keeps the first place and the last entry given)."""
    if not selected or len(selected) != len(rows) or len(placed) != len(rows):
        return None
    entries = {p.name: p.selected_entry for p in placed}
    return entries if len(entries) == len(rows) else None
