"""kubectl describe's layout for any object (its generic describer): the Name/Namespace/Labels/Annotations
header, every other field as ``Smart Label:  value`` lines nested by indentation, and the Events table.

Invariants:
- Lines are built with tabs between label and value, then aligned as Go's tabwriter aligns them (padding 2,
  a column's width set by the run of consecutive lines that have that column), so the output lines up
  with kubectl's, character for character where the content is the same.
- Fields are in sorted order at every level; lists of maps print each map's fields one after another, as
  kubectl does (no dashes); ``managedFields`` and the header's fields are not repeated.
- Events are oldest first, with kubectl's Age column (``5m (x3 over 10m)`` for repeats) and ``<none>`` when
  there are none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from federation.model.tables import human_duration, parse_time

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
HEADER_SKIP = frozenset(
    {
        ".metadata.managedFields",
        ".metadata.name",
        ".metadata.namespace",
        ".metadata.labels",
        ".metadata.annotations",
    }
)
_ACRONYMS = frozenset({"API", "URL", "UID", "OSB", "GUID"})
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def smart_label(field: str) -> str:
    """kubectl's ``smartLabelFor``: ``apiVersion`` → ``API Version``; names with other characters as-is."""
    if any(not (c.isalpha() or c == "-") for c in field):
        return field
    parts = _CAMEL.findall(field) or [field]
    return " ".join(p.upper() if p.upper() in _ACRONYMS else p[:1].upper() + p[1:] for p in parts)


def value_text(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON scalar."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def header_lines(obj: Mapping[str, Any]) -> list[str]:
    meta = obj.get("metadata") or {}
    labels = [f"{k}={v}" for k, v in sorted((meta.get("labels") or {}).items())]
    notes = [f"{k}: {v}" for k, v in sorted((meta.get("annotations") or {}).items()) if k != LAST_APPLIED]
    return [
        f"Name:\t{meta.get('name') or ''}",
        f"Namespace:\t{meta.get('namespace') or ''}",
        *_multiline("Labels", labels),
        *_multiline("Annotations", notes),
    ]


def _multiline(title: str, entries: Sequence[str]) -> list[str]:
    if not entries:
        return [f"{title}:\t<none>"]
    return [f"{title}:\t{entries[0]}", *(f"\t{entry}" for entry in entries[1:])]


def content_lines(
    content: Mapping[str, Any], level: int = 0, skip: Iterable[str] = HEADER_SKIP, prefix: str = ""
) -> list[str]:
    """kubectl's ``printUnstructuredContent``: every field of ``content`` but those in ``skip`` (paths like
    ``.metadata.name``)."""
    skipped = frozenset(skip)
    lines: list[str] = []
    indent = "  " * level
    for field in sorted(content):
        path, value = f"{prefix}.{field}", content[field]
        if path in skipped:
            continue
        if isinstance(value, Mapping):
            lines += [f"{indent}{smart_label(field)}:", *content_lines(value, level + 1, skipped, path)]
        elif isinstance(value, list):
            lines.append(f"{indent}{smart_label(field)}:")
            for item in value:
                if isinstance(item, Mapping):
                    lines += content_lines(item, level + 1, skipped, path)
                else:
                    lines.append(f"{indent}  {value_text(item)}")
        else:
            lines.append(f"{indent}{smart_label(field)}:\t{value_text(value)}")
    return lines


def event_lines(events: Sequence[Mapping[str, Any]] | None, now: datetime) -> list[str]:
    """kubectl's ``DescribeEvents`` of core/v1 Events."""
    if not events:
        return ["Events:\t<none>"]
    lines = ["Events:", "  Type\tReason\tAge\tFrom\tMessage", "  ----\t------\t----\t----\t-------"]
    for event in sorted(events, key=_seen):
        source = (event.get("source") or {}).get("component") or event.get("reportingController") or ""
        cells = [
            event.get("type", ""),
            event.get("reason", ""),
            _interval(event, now),
            source,
            event.get("message"),
        ]
        lines.append("  " + "\t".join(str(cell or "").strip() for cell in cells))
    return lines


def _seen(event: Mapping[str, Any]) -> str:
    return str(event.get("lastTimestamp") or event.get("firstTimestamp") or "")


def _since(stamp: Any, now: datetime) -> str:
    parsed = parse_time(stamp)
    return "<unknown>" if parsed is None else human_duration((now - parsed).total_seconds())


def _interval(event: Mapping[str, Any], now: datetime) -> str:
    first = _since(event.get("eventTime") or event.get("firstTimestamp"), now)
    count = event.get("count")
    if isinstance(count, int) and count > 1:
        return f"{_since(event.get('lastTimestamp'), now)} (x{count} over {first})"
    return first


def tabbed(lines: Sequence[str], padding: int = 2) -> str:
    """Align tab-separated cells as Go's ``tabwriter`` (min width 0, padding 2, spaces): each run of
    consecutive lines with a cell in a column pads that column to its widest cell."""
    rows = [line.split("\t") for line in lines]
    widths: list[dict[int, int]] = [{} for _ in rows]
    for column in range(max((len(r) for r in rows), default=1) - 1):
        start = None
        for index in range(len(rows) + 1):
            inside = index < len(rows) and len(rows[index]) > column + 1
            if inside and start is None:
                start = index
            elif not inside and start is not None:
                width = max(len(rows[i][column]) for i in range(start, index)) + padding
                for i in range(start, index):
                    widths[i][column] = width
                start = None
    return "\n".join(
        "".join(cell.ljust(widths[i].get(c, 0)) for c, cell in enumerate(row)).rstrip()
        for i, row in enumerate(rows)
    )
