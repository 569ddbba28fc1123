"""Status conditions as plain dicts (metav1.Condition), upserted the way `meta.SetStatusCondition` does.

Invariant: `lastTransitionTime` moves only when the condition's status flips, so re-asserting an unchanged
condition yields an identical list (and the caller's "write only when changed" check holds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from federation.store.derive import parse_timestamp
from federation.store.manifest import format_timestamp


def find(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions or [] if isinstance(c, Mapping) and c.get("type") == type_), None)


def upsert(
    conditions: Sequence[Mapping[str, Any]] | None,
    type_: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """``conditions`` with the ``type_`` condition set; other conditions keep their place."""
    value = "True" if status else "False"
    previous = find(conditions, type_)
    transition = format_timestamp(now)
    if previous is not None and previous.get("status") == value:
        transition = str(previous.get("lastTransitionTime") or transition)
    condition = {
        "type": type_,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }
    existing = [dict(c) for c in conditions or []]
    if previous is None:
        return [*existing, condition]
    return [condition if c.get("type") == type_ else c for c in existing]


def false_since(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> datetime | None:
    """When the ``type_`` condition last turned False (None unless it is False now)."""
    condition = find(conditions, type_)
    if condition is None or condition.get("status") != "False":
        return None
    return parse_timestamp(condition.get("lastTransitionTime"))
