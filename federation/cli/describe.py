"""`federation describe`: one object for a human, kubectl-style sections.

Bindings get their scheduling explanation (the latest decision record, read from
``GET /federation/v1/decisions``; `status.schedulingExplanation` keeps its summary; shape in
`federation.scheduling.explain`) as a per-cluster table: the
filter that rejected each cluster and why, or each score plugin's score and weight, whether the spread
selection kept it and its replicas; then the selection order and the division trace. So "why is nothing
on member3?" is one command.

WorkloadRebalancers get their workloads as one table (namespace, workload, result, reason) instead of a
YAML dump of spec and status: every workload of the spec (``Pending`` until it has a result), then those
only the status still lists (removed from the spec after they succeeded, as Karmada keeps them).
"""

from __future__ import annotations

from typing import Any

import yaml

from federation.cli.printers import observed_results, render_rows, workload_key

EXPLANATION_KEY = "schedulingExplanation"
REBALANCER_KIND = "WorkloadRebalancer"


def describe_text(obj: dict[str, Any], decided: dict[str, Any] | None = None) -> str:
    """``decided``: a binding's latest decision's whole explanation, shown instead of the summary its
    status keeps (the per-cluster part lives in the decision record)."""
    meta = obj.get("metadata") or {}
    status = dict(obj.get("status") or {})
    explanation = decided or status.pop(EXPLANATION_KEY, None)
    status.pop(EXPLANATION_KEY, None)
    conditions = status.pop("conditions", None)
    lines = [
        f"Name:         {meta.get('name', '')}",
        f"Namespace:    {meta.get('namespace') or ''}",
        f"Labels:       {_pairs(meta.get('labels'))}",
        f"Annotations:  {_pairs(meta.get('annotations'))}",
        f"API Version:  {obj.get('apiVersion', '')}",
        f"Kind:         {obj.get('kind', '')}",
        f"Generation:   {meta.get('generation', '')}",
        f"Created:      {meta.get('creationTimestamp', '')}",
    ]
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    if obj.get("kind") == REBALANCER_KIND:
        lines += rebalancer_lines(obj)
        status = {k: v for k, v in status.items() if k not in REBALANCER_STATUS_KEYS}
        body = {k: v for k, v in body.items() if k != "spec"}
    for key, value in body.items():
        lines += [f"{key.capitalize()}:", _indent(value)]
    if status:
        lines += ["Status:", _indent(status)]
    if conditions:
        lines += ["Conditions:", _indent_text(render_rows(_condition_rows(conditions)))]
    if explanation:
        lines += ["Scheduling explanation:", _indent_text(explain_text(explanation))]
    return "\n".join(lines)


REBALANCER_STATUS_KEYS = frozenset({"observedWorkloads", "finishTime", "observedGeneration"})


def rebalancer_lines(obj: dict[str, Any]) -> list[str]:
    """The TTL, the finish time, the observed generation and the workloads table of a rebalancer; spec
    fields other than workloads and the TTL (none today) are kept as YAML so nothing is hidden."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ttl = spec.get("ttlSecondsAfterFinished")
    lines = [
        f"TTL After Finished:   {'<none>' if ttl is None else f'{ttl}s'}",
        f"Finished:             {status.get('finishTime') or '<none>'}",
        f"Observed Generation:  {status.get('observedGeneration', '<none>')}",
    ]
    rest = {k: v for k, v in spec.items() if k not in ("workloads", "ttlSecondsAfterFinished")}
    if rest:
        lines += ["Spec:", _indent(rest)]
    return [*lines, "Workloads:", _indent_text(render_rows(rebalancer_rows(obj)))]


def rebalancer_rows(obj: dict[str, Any]) -> list[list[str]]:
    """Header plus one row per workload: the spec's in order, then status-only ones (kept after removal)."""
    results = observed_results(obj)
    refs = [r for r in (obj.get("spec") or {}).get("workloads") or [] if isinstance(r, dict)]
    in_spec = {workload_key(r) for r in refs}
    refs += [entry.get("workload") or {} for key, entry in results.items() if key not in in_spec]
    rows = [["NAMESPACE", "WORKLOAD", "RESULT", "REASON"]]
    for ref in refs:
        entry = results.get(workload_key(ref), {})
        rows.append(
            [
                str(ref.get("namespace") or "<none>"),
                f"{str(ref.get('kind') or '').lower()}/{ref.get('name') or ''}",
                str(entry.get("result") or "Pending"),
                str(entry.get("reason") or ""),
            ]
        )
    return rows


def explain_text(explanation: dict[str, Any]) -> str:
    """A summary line, the per-cluster table (filter verdict or scores, selection, replicas), then the
    selection order, the division trace and the affinity attempts."""
    parts = [_summary(explanation)]
    clusters = explanation.get("clusters")
    if isinstance(clusters, dict) and clusters:
        parts.append(render_rows(_cluster_rows(clusters)))
    order = (explanation.get("selection") or {}).get("order")
    if order:
        parts.append(f"Selection order: {', '.join(map(str, order))}")
    for key, title in (("division", "Division"), ("attempts", "Affinity attempts")):
        if explanation.get(key):
            parts += [f"{title}:", _indent(explanation[key])]
    known = {"result", "trigger", "strategy", "affinityName", "clusters", "selection", "division", "attempts"}
    known |= {"unplaced", "avoidIgnored"}
    rest = {k: v for k, v in explanation.items() if k not in known}
    if rest:
        parts.append(yaml.safe_dump(rest, sort_keys=False).rstrip())
    return "\n".join(p for p in parts if p)


def _summary(explanation: dict[str, Any]) -> str:
    pieces = [f"Result: {explanation.get('result', '<unknown>')}"]
    for key, label in (("trigger", "trigger"), ("strategy", "strategy"), ("affinityName", "affinity term")):
        if explanation.get(key):
            pieces.append(f"{label}: {explanation[key]}")
    if explanation.get("unplaced"):
        pieces.append(f"unplaced replicas: {explanation['unplaced']}")
    if explanation.get("avoidIgnored"):
        pieces.append("avoid list ignored (nothing else fits)")
    return ", ".join(pieces)


def _cluster_rows(clusters: dict[str, Any]) -> list[list[str]]:
    rows = [["CLUSTER", "RESULT", "REPLICAS", "AVAILABLE", "SCORE", "DETAIL"]]
    for name, entry in sorted(clusters.items()):
        passed = (entry.get("filter") or {}).get("passed", True)
        verdict = "filtered" if not passed else ("selected" if entry.get("selected") else "not selected")
        rows.append(
            [
                str(name),
                verdict,
                str(entry.get("replicas", 0)),
                str(entry.get("available", "")),
                str(entry.get("totalScore", "")),
                _failures(entry.get("filter") or {}) if not passed else _scores(entry.get("scores")),
            ]
        )
    return rows


def _failures(verdict: dict[str, Any]) -> str:
    failures = verdict.get("failures") or [{"plugin": verdict.get("plugin"), "reason": verdict.get("reason")}]
    return "; ".join(f"{f.get('plugin')}: {f.get('reason')}" for f in failures)


def _scores(scores: Any) -> str:
    """``Plugin=scorexweight`` for each score plugin."""
    if not isinstance(scores, dict):
        return ""
    return ", ".join(
        f"{k}={v.get('score')}x{v.get('weight', 1)}" for k, v in scores.items() if isinstance(v, dict)
    )


def _condition_rows(conditions: list[dict[str, Any]]) -> list[list[str]]:
    rows = [["TYPE", "STATUS", "REASON", "MESSAGE"]]
    rows += [[str(c.get(k, "")) for k in ("type", "status", "reason", "message")] for c in conditions]
    return rows


def _pairs(mapping: dict[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in (mapping or {}).items()) or "<none>"


def _indent(value: Any) -> str:
    return _indent_text(yaml.safe_dump(value, sort_keys=False, default_flow_style=False).rstrip())


def _indent_text(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
