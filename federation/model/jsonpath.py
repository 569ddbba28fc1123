"""The subset of Kubernetes JSONPath that CRD ``additionalPrinterColumns`` use.

Supported: ``.field`` (``.field\\.with\\.dots`` escapes a dot), ``['field']``, ``[n]`` (negative counts
from the end), ``[*]`` and ``.*``, and filters ``[?(@.a.b)]`` (present) and ``[?(@.a.b OP literal)]``
with ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` against a quoted string, a number, ``true``/``false`` or
``null``. That covers the columns CRDs declare in practice (``.status.conditions[?(@.type=="Ready")].status``,
``.spec.workload.manifests[*].kind``).

Invariants:
- ``compile_path`` raises ``ValueError`` naming the problem for anything outside the subset; a compiled path
  never raises on data: a missing key, a wrong type or an index out of range yields no result (kube-apiserver
  evaluates printer columns with missing keys allowed).
- Results keep document order.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Step = Callable[[Any], Iterable[Any]]

_FILTER = re.compile(r"^\?\(\s*@((?:\.[A-Za-z0-9_\-]+)*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*\)$")
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True, slots=True)
class JsonPath:
    """A compiled path: ``find(document)`` lists every value it selects."""

    text: str
    steps: tuple[Step, ...]

    def find(self, document: Any) -> list[Any]:
        current = [document]
        for step in self.steps:
            current = [found for value in current for found in step(value)]
        return current


def compile_path(text: str) -> JsonPath:
    """Compile ``.a.b[?(@.x=="y")].c`` (an optional ``{...}`` wrapper is accepted, as kubectl writes it)."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    if not body.startswith((".", "[")):
        raise ValueError(f"JSONPath {text!r} must start with '.' or '['")
    return JsonPath(text, tuple(_steps(body, text)))


def _steps(body: str, text: str) -> list[Step]:
    steps: list[Step] = []
    position = 0
    while position < len(body):
        if body.startswith("..", position):
            raise ValueError(f"JSONPath {text!r}: recursive descent ('..') is not supported")
        if body[position] == ".":
            name, position = _field_name(body, position + 1)
            steps.append(_wildcard if name == "*" else _field(name))
        elif body[position] == "[":
            end = _closing_bracket(body, position, text)
            steps.append(_bracket(body[position + 1 : end].strip(), text))
            position = end + 1
        else:
            raise ValueError(f"JSONPath {text!r}: unexpected {body[position]!r} at {position}")
    return steps


def _field_name(body: str, start: int) -> tuple[str, int]:
    name: list[str] = []
    position = start
    while position < len(body) and body[position] not in ".[":
        if body[position] == "\\" and position + 1 < len(body):
            position += 1
        name.append(body[position])
        position += 1
    return "".join(name), position


def _closing_bracket(body: str, start: int, text: str) -> int:
    depth, quote = 0, ""
    for position in range(start, len(body)):
        char = body[position]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
            if depth == 0:
                return position
    raise ValueError(f"JSONPath {text!r}: unbalanced brackets")


def _bracket(inner: str, text: str) -> Step:
    if inner == "*":
        return _wildcard
    if inner[:1] in "'\"" and inner[-1:] == inner[:1] and len(inner) >= 2:
        return _field(inner[1:-1])
    if re.fullmatch(r"-?\d+", inner):
        return _index(int(inner))
    match = _FILTER.match(inner)
    if match is None:
        raise ValueError(f"JSONPath {text!r}: unsupported expression [{inner}]")
    fields = tuple(f for f in match.group(1).split(".") if f)
    if match.group(2) is None:
        return _filter(fields, None, None)
    return _filter(fields, _COMPARE[match.group(2)], _literal(match.group(3), text))


def _literal(token: str, text: str) -> Any:
    if token[:1] in "'\"" and token[-1:] == token[:1] and len(token) >= 2:
        return token[1:-1]
    try:
        return json.loads(token)
    except ValueError as exc:
        raise ValueError(f"JSONPath {text!r}: {token!r} is not a literal") from exc


def _field(name: str) -> Step:
    return lambda value: [value[name]] if isinstance(value, dict) and name in value else []


def _wildcard(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, list) else []


def _index(index: int) -> Step:
    def step(value: Any) -> Iterable[Any]:
        if not isinstance(value, list) or not -len(value) <= index < len(value):
            return []
        return [value[index]]

    return step


def _filter(fields: Sequence[str], compare: Callable[[Any, Any], bool] | None, literal: Any) -> Step:
    def keep(item: Any) -> bool:
        found, value = _lookup(item, fields)
        if compare is None:
            return found
        try:
            return found and bool(compare(value, literal))
        except TypeError:  # an ordering between unlike types: no match, as Go's evaluator says nothing
            return False

    return lambda value: [item for item in _wildcard(value) if keep(item)]


def _lookup(item: Any, fields: Sequence[str]) -> tuple[bool, Any]:
    current = item
    for name in fields:
        if not isinstance(current, dict) or name not in current:
            return False, None
        current = current[name]
    return True, current
