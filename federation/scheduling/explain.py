"""The explanation stored with every decision: JSON-able, one entry per cluster plus the traces.

Shape (all keys camelCase, stable for ``describe`` and SQL queries)::

    {"strategy": "DynamicWeight", "affinityName": "primary" | null, "avoidIgnored": false,
     "clusters": {"<name>": {"filter": {"passed": false, "plugin": "TaintToleration",
                                        "reason": "...", "failures": [{"plugin", "reason"}...]}
                                        (a cluster that passed: {"passed": true}),
                             "scores": {"ClusterLocality": {"score": 100, "weight": 1}, ...},
                             "totalScore": 100, "allocatable": 7, "available": 10,
                             "selected": true, "replicas": 3}},
     "selection": {"order": [...], "selected": [...]},
     "division": {...trace...}, "attempts": [{"affinityName", "result", "message"}...]}

Invariants:
- Only plain dict/list/str/int/bool/None values, so ``json.dumps`` never fails.
- Compact, because it is written with every decision (100 clusters for every scheduled binding): a passed
  filter is ``{"passed": true}`` alone, and clusters with the same score parts share one score dict.
- Nothing here mutates an entry once it is built: a cluster's entries are made once per ``rows.Row`` and
  shared by every explanation that row serves (with a cycle's memo, by the cycle's results), so a binding's
  marks (selected, replicas) go into a copy (``marked``). Whoever reads an explanation must not mutate it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from federation.scheduling.filters import FilterVerdict

# Types ``plain`` leaves as they are (exactly these: a subclass goes the general way, as before).
_SCALARS = frozenset({str, int, float, bool, type(None)})
# One JSON object of the explanation (a cluster's entry, its filter or scores part).
Entry = dict[str, Any]


def filter_entry(verdict: FilterVerdict) -> Entry:
    if verdict.passed:
        return {"passed": True}
    return {
        "passed": verdict.passed,
        "plugin": verdict.plugin,
        "reason": verdict.reason,
        "failures": [{"plugin": p, "reason": r} for p, r in verdict.failures],
    }


def score_entry(parts: Mapping[str, tuple[int, int]]) -> Entry:
    return {name: {"score": s, "weight": w} for name, (s, w) in parts.items()}


def bare_entry(filter_part: Entry) -> Entry:
    """A cluster's entry before scoring: where it stays when it was filtered out or the attempt failed."""
    return {"filter": filter_part, "selected": False, "replicas": 0}


def placed_entry(
    filter_part: Entry,
    score_part: Entry,
    total: int,
    allocatable: int,
    available: int,
    *,
    selected: bool = False,
) -> Entry:
    """A feasible cluster's entry, without replicas (``marked`` gives them)."""
    return {
        "filter": filter_part,
        "selected": selected,
        "replicas": 0,
        "scores": score_part,
        "totalScore": total,
        "allocatable": allocatable,
        "available": available,
    }


def marked(entry: Entry, *, selected: bool | None = None, replicas: int | None = None) -> Entry:
    """A copy of ``entry`` saying the cluster was selected and how many replicas it got: entries may be
    shared by several explanations, so a binding's own marks go into a new dict, never into ``entry``."""
    out = dict(entry)
    if selected is not None:
        out["selected"] = selected
    if replicas is not None:
        out["replicas"] = replicas
    return out


def plain(value: Any) -> Any:
    """Deep-convert mappings/sequences/sets into JSON-native dicts and lists."""
    if type(value) in _SCALARS:  # most values of a trace, spared the ABC checks below
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return [plain(v) for v in items]
    return value
