"""The failover history over HTTP, and its Prometheus figures.

    GET /federation/v1/evictions?namespace=NS&binding=NAME&cluster=C&action=A&limit=N
        → 200 ``{"kind": "EvictionHistoryList", "items": [{time, action, binding{kind,namespace,name,uid},
          cluster, reason, producer, message}]}``, newest first

Invariants:
- Read-only; admin and viewer may read it (it says what moved where, nothing secret); agents may not.
- The metrics are read from the database at scrape time (``FailoverCollector``), so every ``serve``
  replica reports the same fleet-wide figures, whichever one runs the controllers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Text, cast, func, select
from starlette.concurrency import run_in_threadpool

from federation.api.context import ApiContext, authenticate
from federation.api.status import bad_request, forbidden
from federation.store.db import UnitOfWork
from federation.store.history import EVICTED, HistoryEntry, HistoryRepository
from federation.store.manifest import format_timestamp
from federation.store.tables import GracefulEvictionTaskRow, ResourceBindingRow

EVICTIONS_PATH = "/federation/v1/evictions"
READ_ROLES = frozenset({"admin", "viewer"})
MAX_LIMIT = 5000


def history_list(uow: UnitOfWork, query: dict[str, str]) -> dict[str, Any]:
    limit = _limit(query.get("limit"))
    with uow() as session:
        binding_uid = _binding_uid(session, query) if query.get("binding") else None
        if query.get("binding") and binding_uid is None:
            return {"kind": "EvictionHistoryList", "apiVersion": "federation/v1", "items": []}
        entries = HistoryRepository(session).list(
            binding_uid=binding_uid,
            cluster=query.get("cluster") or None,
            namespace=query.get("namespace") if "namespace" in query else None,
            actions=[a for a in (query.get("action") or "").split(",") if a],
            limit=limit,
        )
    return {
        "kind": "EvictionHistoryList",
        "apiVersion": "federation/v1",
        "items": [_item(e) for e in entries],
    }


def _limit(raw: str | None) -> int:
    if raw is None or raw == "":
        return 500
    if not raw.isdigit() or not 0 < int(raw) <= MAX_LIMIT:
        raise bad_request(f"limit must be an integer from 1 to {MAX_LIMIT}, not {raw!r}")
    return int(raw)


def _binding_uid(session: Any, query: dict[str, str]) -> str | None:
    statement = select(ResourceBindingRow.uid).where(
        ResourceBindingRow.namespace == (query.get("namespace") or ""),
        ResourceBindingRow.name == query["binding"],
    )
    uid = session.scalar(statement)
    return None if uid is None else str(uid)


def _item(entry: HistoryEntry) -> dict[str, Any]:
    return {
        "time": format_timestamp(entry.at),
        "action": entry.action,
        "binding": {
            "kind": entry.binding_kind,
            "namespace": entry.binding_namespace,
            "name": entry.binding_name,
            "uid": entry.binding_uid,
        },
        "cluster": entry.cluster,
        "reason": entry.reason,
        "producer": entry.producer,
        "message": entry.message,
    }


def register(app: FastAPI, ctx: ApiContext) -> None:

    ctx.registry.register(FailoverCollector(ctx.uow))

    @app.get(EVICTIONS_PATH, summary="Failover history: taints, evictions, task removals, budget changes")
    async def evictions(request: Request) -> JSONResponse:
        principal = authenticate(ctx, request)
        if principal.role not in READ_ROLES:
            raise forbidden(f'{principal.role} "{principal.name}" cannot read the failover history')
        query = dict(request.query_params)
        return JSONResponse(await run_in_threadpool(history_list, ctx.uow, query))


class FailoverCollector(Collector):
    """Evictions by reason, pending graceful-eviction tasks, bindings whose failover budget is spent."""

    def __init__(self, uow: UnitOfWork) -> None:
        self._uow = uow

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        evictions = CounterMetricFamily(
            "federation_evictions", "Workloads evicted from a cluster, by reason", labels=["reason"]
        )
        pending = GaugeMetricFamily(
            "federation_eviction_tasks_pending", "Graceful-eviction tasks not yet done"
        )
        exhausted = GaugeMetricFamily(
            "federation_failover_exhausted_bindings", "Bindings whose failover retry budget is spent"
        )
        try:
            with self._uow() as session:
                counts = HistoryRepository(session).counts(EVICTED)
                tasks = session.scalar(select(func.count()).select_from(GracefulEvictionTaskRow)) or 0
                spent = _exhausted(session)
        except Exception:  # a scrape during an outage reports nothing rather than failing /metrics
            return
        for reason, count in sorted(counts.items()):
            evictions.add_metric([reason], count)
        pending.add_metric([], tasks)
        exhausted.add_metric([], spent)
        yield from (evictions, pending, exhausted)


def _exhausted(session: Any) -> int:
    """Bindings carrying ``FailoverExhausted=True``: the database narrows to statuses that mention it
    (a handful), Python checks the condition's status."""
    mentions = cast(ResourceBindingRow.status, Text).like("%FailoverExhausted%")
    rows = session.scalars(select(ResourceBindingRow.status).where(mentions))
    return sum(
        1
        for status in rows
        if isinstance(status, dict)
        and any(
            c.get("type") == "FailoverExhausted" and c.get("status") == "True"
            for c in status.get("conditions") or []
            if isinstance(c, dict)
        )
    )
