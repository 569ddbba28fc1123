"""`federation describe`: one object for a human, kubectl-style sections.

Bindings get their scheduling explanation (the decision record the scheduler stores under
`status.schedulingExplanation`) as a per-cluster table, so "why is nothing on member3?" is one command.
"""

from __future__ import annotations

from typing import Any

import yaml

from federation.cli.printers import render_rows

EXPLANATION_KEY = "schedulingExplanation"


def describe_text(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    status = dict(obj.get("status") or {})
    explanation = status.pop(EXPLANATION_KEY, None)
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
    for key, value in body.items():
        lines += [f"{key.capitalize()}:", _indent(value)]
    if status:
        lines += ["Status:", _indent(status)]
    if conditions:
        lines += ["Conditions:", _indent_text(render_rows(_condition_rows(conditions)))]
    if explanation:
        lines += ["Scheduling explanation:", _indent_text(explain_text(explanation))]
    return "\n".join(lines)


def explain_text(explanation: dict[str, Any]) -> str:
    """Per-cluster verdicts first (filter or scores), then whatever else the decision recorded."""
    clusters = explanation.get("clusters")
    rest = {k: v for k, v in explanation.items() if k != "clusters"}
    parts = []
    if isinstance(clusters, list) and clusters:
        parts.append(render_rows(_cluster_rows(clusters)))
    if rest:
        parts.append(yaml.safe_dump(rest, sort_keys=False).rstrip())
    return "\n".join(parts)


def _cluster_rows(clusters: list[dict[str, Any]]) -> list[list[str]]:
    rows = [["CLUSTER", "RESULT", "REPLICAS", "DETAIL"]]
    for entry in clusters:
        detail = entry.get("reason") or _scores(entry.get("scores"))
        rows.append(
            [
                str(entry.get("name", "")),
                str(entry.get("result") or ("filtered" if entry.get("filter") else "")),
                str(entry.get("replicas", "")),
                f"{entry['filter']}: {detail}" if entry.get("filter") else str(detail),
            ]
        )
    return rows


def _scores(scores: Any) -> str:
    if not scores:
        return ""
    if isinstance(scores, dict):
        return ", ".join(f"{k}={v}" for k, v in scores.items())
    return ", ".join(
        f"{s.get('plugin')}={s.get('score')}x{s.get('weight', 1)}" for s in scores if isinstance(s, dict)
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
