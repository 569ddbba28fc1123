"""Server-side printing: ``meta.k8s.io/v1 Table`` responses, which ``kubectl get`` asks for.

Invariants:
- Served only when the Accept header asks for ``as=Table``; every row embeds the full object, so kubectl's
  ``-o wide``, ``--show-labels`` and sorting have what they need.
- Columns follow kubectl's familiar ones for the common kinds (Deployment, StatefulSet, ReplicaSet, Pod,
  Node, Namespace); any other kind gets NAME and AGE.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from starlette.requests import Request

from federation.members.sim.kinds import ResourceType

Row = Callable[[dict[str, Any], float], list[Any]]


def wants_table(request: Request) -> bool:
    return "as=Table" in request.headers.get("accept", "")


def age(obj: dict[str, Any], now: float) -> str:
    stamp = obj.get("metadata", {}).get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    seconds = max(0, int(now - datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()))
    for limit, size, unit in ((120, 1, "s"), (7200, 60, "m"), (172800, 3600, "h")):
        if seconds < limit:
            return f"{seconds // size}{unit}"
    return f"{seconds // 86400}d"


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def _workload_row(obj: dict[str, Any], now: float) -> list[Any]:
    status, want = _status(obj), (obj.get("spec") or {}).get("replicas", 1)
    return [
        f"{status.get('readyReplicas', 0)}/{want}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(obj, now),
    ]


def _pod_row(obj: dict[str, Any], now: float) -> list[Any]:
    status = _status(obj)
    containers = status.get("containerStatuses") or []
    ready = sum(1 for c in containers if c.get("ready"))
    total = len((obj.get("spec") or {}).get("containers") or [])
    waiting = [c["state"]["waiting"].get("reason") for c in containers if "waiting" in c.get("state", {})]
    phase = waiting[0] if waiting else status.get("phase", "Pending")
    restarts = sum(int(c.get("restartCount", 0)) for c in containers)
    node = (obj.get("spec") or {}).get("nodeName") or "<none>"
    return [f"{ready}/{total}", phase, restarts, age(obj, now), status.get("podIP", "<none>"), node]


def _node_row(obj: dict[str, Any], now: float) -> list[Any]:
    conditions = _status(obj).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    version = (_status(obj).get("nodeInfo") or {}).get("kubeletVersion", "")
    return ["Ready" if ready else "NotReady", "<none>", age(obj, now), version]


def _namespace_row(obj: dict[str, Any], now: float) -> list[Any]:
    return [_status(obj).get("phase", "Active"), age(obj, now)]


def _age_row(obj: dict[str, Any], now: float) -> list[Any]:
    return [age(obj, now)]


_COLUMNS: dict[str, tuple[list[tuple[str, str, int]], Row]] = {
    "Deployment": (
        [
            ("Ready", "string", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Age", "string", 0),
        ],
        _workload_row,
    ),
    "Pod": (
        [
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "integer", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
        ],
        _pod_row,
    ),
    "Node": (
        [("Status", "string", 0), ("Roles", "string", 0), ("Age", "string", 0), ("Version", "string", 0)],
        _node_row,
    ),
    "Namespace": ([("Status", "string", 0), ("Age", "string", 0)], _namespace_row),
}
_DEFAULT: tuple[list[tuple[str, str, int]], Row] = ([("Age", "string", 0)], _age_row)


def table_for(
    rtype: ResourceType, items: list[dict[str, Any]], now: float, resource_version: str
) -> dict[str, Any]:
    columns, row = _COLUMNS.get(rtype.kind, _DEFAULT)
    if rtype.kind in ("StatefulSet", "ReplicaSet"):
        columns, row = _COLUMNS["Deployment"]
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}]
    definitions += [
        {"name": n, "type": t, "format": "", "description": n, "priority": p} for n, t, p in columns
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": [{"cells": [o["metadata"]["name"], *row(o, now)], "object": o} for o in items],
    }
