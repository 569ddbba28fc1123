"""Label and field selectors as the API server parses them from ``labelSelector`` / ``fieldSelector``.

Invariants:
- Label selectors support equality (``=``, ``==``, ``!=``), sets (``in``, ``notin``) and existence
  (``key``, ``!key``); requirements are ANDed. A malformed selector raises ``ApiError`` 400.
- Field selectors support ``=``, ``==`` and ``!=`` on any dotted path (``metadata.name``,
  ``metadata.namespace``, ``spec.nodeName``, ``status.phase``); a missing field compares as ``""``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from federation.members.sim.errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\((.*)\)\s*$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses (``a in (x,y),b=c`` → two terms)."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _label_term(term: str) -> Callable[[Mapping[str, str]], bool]:
    match = _SET_RE.match(term)
    if match:
        key, op, raw = match.groups()
        values = {v.strip() for v in raw.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in term:
            key, _, value = (s.strip() for s in term.partition(op))
            if not key:
                raise bad_request(f"unable to parse requirement: {term!r}")
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = term[1:].strip()
        return lambda labels: key not in labels
    if re.fullmatch(r"[A-Za-z0-9./_-]+", term):
        return lambda labels: term in labels
    raise bad_request(f"unable to parse requirement: {term!r}")


def label_selector(text: str | None) -> Predicate:
    """A predicate over whole objects for a ``labelSelector`` query value (empty selects everything)."""
    terms = [_label_term(t) for t in _split_top_level(text or "")]

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(term(labels) for term in terms)

    return matches


def match_labels(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A ``LabelSelector`` object (``matchLabels`` + ``matchExpressions``) against a label map."""
    if not selector:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_expression(expr, labels) for expr in selector.get("matchExpressions") or [])


def _expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), set(expr.get("values") or [])
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
    return "" if current is None else str(current)


def _field_term(term: str) -> Predicate:
    for op in ("!=", "==", "="):
        if op in term:
            path, _, value = (s.strip() for s in term.partition(op))
            if op == "!=":
                return lambda obj: _field_value(obj, path) != value
            return lambda obj: _field_value(obj, path) == value
    raise bad_request(f"invalid field selector: {term!r}")


def field_selector(text: str | None) -> Predicate:
    """A predicate for a ``fieldSelector`` query value (empty selects everything)."""
    terms = [_field_term(t) for t in _split_top_level(text or "")]
    return lambda obj: all(term(obj) for term in terms)
