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
  filter is ``{"passed": true}`` alone, and clusters with the same score parts share one score dict
  (never mutated after it is built). With a cycle's memo the filter and score dicts are shared across the
  cycle's explanations too, so they are never mutated either; only the per-cluster entry dicts are a
  binding's own (``mark_result`` writes into them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from federation.scheduling.filters import FilterVerdict
from federation.scheduling.memo import CycleMemo
from federation.scheduling.scores import ClusterScore


def filter_entry(verdict: FilterVerdict) -> dict[str, Any]:
    if verdict.passed:
        return {"passed": True}
    return {
        "passed": verdict.passed,
        "plugin": verdict.plugin,
        "reason": verdict.reason,
        "failures": [{"plugin": p, "reason": r} for p, r in verdict.failures],
    }


def score_entry(score: ClusterScore) -> dict[str, Any]:
    return {name: {"score": s, "weight": w} for name, (s, w) in score.parts.items()}


def cluster_entries(
    verdicts: Sequence[FilterVerdict],
    scores: Mapping[str, ClusterScore],
    allocatable: Mapping[str, int],
    available: Mapping[str, int],
    memo: CycleMemo | None = None,
) -> dict[str, dict[str, Any]]:
    """One entry per verdict; with the cycle's ``memo``, the filter and score dicts of the verdicts and
    scores the memo handed out are built once per cycle and shared by its explanations (without one,
    the score dicts of equal score parts are shared within this explanation)."""
    found = [scores.get(v.cluster) for v in verdicts]
    present = [s for s in found if s is not None]
    if memo is not None:
        filtered = memo.derived("explain-filter", verdicts, filter_entry)
        score_parts = memo.derived("explain-scores", present, score_entry)
    else:
        filtered = [filter_entry(v) for v in verdicts]
        by_parts: dict[tuple[tuple[str, tuple[int, int]], ...], dict[str, Any]] = {}
        for kept in present:
            parts = tuple(kept.parts.items())
            if parts not in by_parts:
                by_parts[parts] = score_entry(kept)
        score_parts = [by_parts[tuple(kept.parts.items())] for kept in present]
    shared = iter(score_parts)
    entries: dict[str, dict[str, Any]] = {}
    for verdict, filter_part, score in zip(verdicts, filtered, found, strict=True):
        entry: dict[str, Any] = {"filter": filter_part, "selected": False, "replicas": 0}
        if score is not None:
            entry["scores"] = next(shared)
            entry["totalScore"] = score.total
        if verdict.cluster in allocatable:
            entry["allocatable"] = allocatable[verdict.cluster]
            entry["available"] = available[verdict.cluster]
        entries[verdict.cluster] = entry
    return entries


def mark_result(
    entries: dict[str, dict[str, Any]], selected: Sequence[str], replicas: Mapping[str, int]
) -> None:
    for name in selected:
        if name in entries:
            entries[name]["selected"] = True
    for name, count in replicas.items():
        if name in entries:
            entries[name]["replicas"] = count


def plain(value: Any) -> Any:
    """Deep-convert mappings/sequences/sets into JSON-native dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return [plain(v) for v in items]
    return value
