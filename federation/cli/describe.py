"""`federation describe`: one object for a human, in kubectl describe's layout (``kubectl_layout``) with
the Events section last.

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

from datetime import UTC, datetime
from typing import Any

import yaml

from federation.cli.kubectl_layout import content_lines, event_lines, header_lines, tabbed
from federation.cli.printers import observed_results, render_rows, workload_key

EXPLANATION_KEY = "schedulingExplanation"
REBALANCER_KIND = "WorkloadRebalancer"


def describe_text(
    obj: dict[str, Any],
    decided: dict[str, Any] | None = None,
    *,
    events: list[dict[str, Any]] | None = None,
    extra: str | None = None,
    now: datetime | None = None,
) -> str:
    """kubectl's generic layout of ``obj``, then what we add (a binding's scheduling explanation, a
    rebalancer's workloads, ``extra``), then the Events section (``events``: the object's core/v1 Events;
    None when they were not looked up, which leaves the section out).

    ``decided``: a binding's latest decision's whole explanation, shown instead of the summary its status
    keeps (the per-cluster part lives in the decision record)."""
    status = dict(obj.get("status") or {})
    explanation = decided or status.pop(EXPLANATION_KEY, None)
    status.pop(EXPLANATION_KEY, None)
    body = {k: v for k, v in obj.items() if k != "status"}
    tail: list[str] = []
    if obj.get("kind") == REBALANCER_KIND:
        spec = {k: v for k, v in (obj.get("spec") or {}).items() if k not in REBALANCER_SPEC_KEYS}
        body = {**body, "spec": spec} if spec else {k: v for k, v in body.items() if k != "spec"}
        status = {k: v for k, v in status.items() if k not in REBALANCER_STATUS_KEYS}
        tail += rebalancer_lines(obj)
    if status:
        body["status"] = status
    sections = [tabbed([*header_lines(obj), *content_lines(body)]), *tail]
    if explanation:
        sections += ["Scheduling explanation:", _indent_text(explain_text(explanation))]
    if extra:
        sections.append(extra)
    if events is not None:
        sections.append(tabbed(event_lines(events, now or datetime.now(UTC))))
    return "\n".join(sections)


REBALANCER_STATUS_KEYS = frozenset({"observedWorkloads", "finishTime", "observedGeneration"})
REBALANCER_SPEC_KEYS = frozenset({"workloads", "ttlSecondsAfterFinished"})


def rebalancer_lines(obj: dict[str, Any]) -> list[str]:
    """The TTL, the finish time, the observed generation and the workloads table of a rebalancer (its other
    spec fields print with the rest of the object)."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ttl = spec.get("ttlSecondsAfterFinished")
    return [
        f"TTL After Finished:   {'<none>' if ttl is None else f'{ttl}s'}",
        f"Finished:             {status.get('finishTime') or '<none>'}",
        f"Observed Generation:  {status.get('observedGeneration', '<none>')}",
        "Workloads:",
        _indent_text(render_rows(rebalancer_rows(obj))),
    ]


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


def _indent(value: Any) -> str:
    return _indent_text(yaml.safe_dump(value, sort_keys=False, default_flow_style=False).rstrip())


def _indent_text(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
