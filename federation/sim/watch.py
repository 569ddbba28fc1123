"""Watch, simulated by polling: a stream of ``{"type", "object"}`` lines computed by diffing snapshots.

Invariants:
- Snapshots are the rendered objects, so lazily computed status (pods turning Ready, workload counters)
  produces MODIFIED events even though no write bumped the resourceVersion.
- Without a ``resourceVersion`` (or with ``"0"``) the stream starts with ADDED for every matching object,
  as the API server does. With one, it starts with MODIFIED for every matching object: lazily computed
  status may have moved on since the client's list without any resourceVersion to show it, and a
  MODIFIED for an object a client already holds is harmless.
- The stream ends after ``timeoutSeconds`` (default 300s), and earlier when the server shuts down.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

Snapshot = dict[tuple[str, str], dict[str, Any]]
POLL_SECONDS = 0.1


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace", ""), meta.get("name", ""))


def diff(before: Snapshot, after: Snapshot) -> list[dict[str, Any]]:
    """Watch events that turn ``before`` into ``after``."""
    events = [{"type": "DELETED", "object": obj} for key, obj in before.items() if key not in after]
    for key, obj in after.items():
        if key not in before:
            events.append({"type": "ADDED", "object": obj})
        elif before[key] != obj:
            events.append({"type": "MODIFIED", "object": obj})
    return events


def _line(kind: str, obj: dict[str, Any], render: Callable[[dict[str, Any]], dict[str, Any]]) -> bytes:
    return (json.dumps({"type": kind, "object": render(obj)}) + "\n").encode()


async def watch_stream(
    snapshot: Callable[[], list[dict[str, Any]]],
    resource_version: str | None,
    timeout_seconds: float,
    render: Callable[[dict[str, Any]], dict[str, Any]] = lambda obj: obj,
) -> AsyncIterator[bytes]:
    """Events for ``snapshot()`` over time; ``render`` shapes each emitted object (a Table row, say)."""

    def take() -> Snapshot:
        return {_key(o): o for o in snapshot()}

    fresh_start = resource_version in (None, "", "0")
    current: Snapshot = {}
    if not fresh_start:
        current = take()
        for obj in current.values():
            yield _line("MODIFIED", obj, render)
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        latest = take()
        for event in diff(current, latest):
            yield _line(event["type"], event["object"], render)
        current = latest
        await asyncio.sleep(POLL_SECONDS)
