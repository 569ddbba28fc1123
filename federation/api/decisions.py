"""The scheduler's decision records over HTTP: what ``describe rb`` shows as the per-cluster explanation.

    GET /federation/v1/decisions?namespace=NS&binding=NAME&limit=N
        → 200 ``{"kind": "SchedulingDecisionList", "items": [{time, result, message, generation,
          clusters, explanation}]}``, newest first (``namespace`` "" or absent with ``binding``: a
          ClusterResourceBinding)

Why here: a stored binding keeps only the summary of its explanation (``planner.stored_status``); the
per-cluster part (every cluster's filter verdict and scores, ~25 KB at 100 clusters) is written once, to
the decision record, instead of being read and rewritten with the binding by every controller.

Invariants: read-only; admin and viewer may read it (placements and reasons, nothing secret).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from federation.api.context import ApiContext, authenticate
from federation.api.status import bad_request, forbidden
from federation.store.db import UnitOfWork
from federation.store.decisions import Decision, DecisionRepository
from federation.store.manifest import format_timestamp

DECISIONS_PATH = "/federation/v1/decisions"
READ_ROLES = frozenset({"admin", "viewer"})
MAX_LIMIT = 1000


def decision_list(uow: UnitOfWork, query: dict[str, str]) -> dict[str, Any]:
    binding = query.get("binding") or None
    with uow() as session:
        decisions = DecisionRepository(session).history(
            namespace=(query.get("namespace") or "") if binding else query.get("namespace"),
            name=binding,
            limit=_limit(query.get("limit")),
        )
    return {
        "kind": "SchedulingDecisionList",
        "apiVersion": "federation/v1",
        "items": [_item(d) for d in decisions],
    }


def _limit(raw: str | None) -> int:
    if raw is None or raw == "":
        return 20
    if not raw.isdigit() or not 0 < int(raw) <= MAX_LIMIT:
        raise bad_request(f"limit must be an integer from 1 to {MAX_LIMIT}, not {raw!r}")
    return int(raw)


def _item(decision: Decision) -> dict[str, Any]:
    return {
        "time": format_timestamp(decision.created_at),
        "binding": {
            "kind": decision.binding_kind,
            "namespace": decision.binding_namespace,
            "name": decision.binding_name,
            "uid": decision.binding_uid,
        },
        "generation": decision.binding_generation,
        "result": decision.result,
        "message": decision.message,
        "clusters": decision.clusters,
        "explanation": decision.explanation,
    }


def register(app: FastAPI, ctx: ApiContext) -> None:

    @app.get(DECISIONS_PATH, summary="Scheduling decisions with their per-cluster explanation")
    async def decisions(request: Request) -> JSONResponse:
        principal = authenticate(ctx, request)
        if principal.role not in READ_ROLES:
            raise forbidden(f'{principal.role} "{principal.name}" cannot read scheduling decisions')
        return JSONResponse(await run_in_threadpool(decision_list, ctx.uow, dict(request.query_params)))
