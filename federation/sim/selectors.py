"""Label and field selectors as the API server parses them from ``labelSelector`` / ``fieldSelector``.

Invariants:
- Label selectors are the control plane's own (``federation.model.labels``): one parser, one matcher, the
  same answers as the federation API. A malformed selector raises ``ApiError`` 400 naming the problem.
- Field selectors support ``=``, ``==`` and ``!=`` on any dotted path (``metadata.name``,
  ``metadata.namespace``, ``spec.nodeName``, ``status.phase``); a missing field compares as ``""``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from federation.model.labels import parse_selector
from federation.sim.errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]


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


def label_selector(text: str | None) -> Predicate:
    """A predicate over whole objects for a ``labelSelector`` query value (empty selects everything)."""
    try:
        selector = parse_selector(text or "")
    except ValueError as exc:
        raise bad_request(f"unable to parse requirement: {exc}") from exc

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return selector.matches(labels)

    return matches


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
