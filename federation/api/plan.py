"""The live plan endpoint: ``federation plan`` against the server's state, without side effects.

    POST /federation/v1/plan   body: a ``List`` of templates, policies, WorkloadPolicies, bindings
                               → 200 + a ``List`` of the (Cluster)ResourceBindings as they would be written

Invariants:
- Read-only: one transaction that only reads (clusters, (Cluster)PropagationPolicies, WorkloadPolicies,
  the existing bindings of the posted templates, where the bindings of their namespaces run: what the
  WorkloadPolicy counts already hold); nothing is written and no controller is woken.
- The posted objects win over stored ones with the same identity (kind, namespace, name), so a changed
  policy or replica count can be tried before it is applied. Existing bindings are the previous placement.
- admin and viewer may call it (it reads what they may read); agents may not.
- HTTP scheduler extenders are called as the scheduler calls them (``federation.extenders``, the same
  adapter and settings): filter, prioritize and replicas, so the answer is the scheduler's. Bind is never
  called (a plan has no side effects). The extenders are built per request, outside the read transaction,
  and closed after it; the settings are checked once when the route is registered (a bad certificate or two
  binders stop the server at start).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from federation.api.bodies import read_json
from federation.api.context import ApiContext, authenticate
from federation.api.status import bad_request, forbidden
from federation.extenders import build_extenders, close_extenders
from federation.model.binding import binding_name
from federation.scheduling import offline
from federation.scheduling.extender import Extender
from federation.scheduling.planner import engine_config
from federation.settings import Settings
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.placements import placed_bindings
from federation.store.repository import ObjectRepository

PLAN_PATH = "/federation/v1/plan"
PLAN_ROLES = frozenset({"admin", "viewer"})
POLICY_API_VERSION = "policy.karmada.io/v1alpha1"
STORED_KINDS = (
    ("PropagationPolicy", POLICY_API_VERSION),
    ("ClusterPropagationPolicy", POLICY_API_VERSION),
    ("WorkloadPolicy", "kosmos.io/v1alpha1"),
)
Manifest = dict[str, Any]


def items_of(body: Any) -> list[Manifest]:
    """The objects of a ``List`` body (or a bare JSON array); 400 for anything else."""
    items = body.get("items") if isinstance(body, Mapping) else body
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise bad_request("the body must be a List of objects ({kind: List, items: [...]})")
    return [dict(i) for i in items]


def plan_live(
    uow: UnitOfWork,
    settings: Settings,
    posted: Sequence[Manifest],
    now: datetime,
    extenders: Sequence[Extender] = (),
) -> Manifest:
    """Plan ``posted`` over the stored clusters, policies and bindings; the answer ``List``."""
    try:
        given = offline.classify(posted)
        with uow() as session:
            clusters, _ = ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").list()
            stored = [*_stored_policies(session), *_existing_bindings(session, given.templates)]
            namespaces = {str(t["metadata"].get("namespace") or "") for t in given.templates} - {""}
            placements = placed_bindings(session, namespaces)  # what WorkloadPolicy counts already hold
        manifests = [*given.templates, *_overlay(stored, _non_templates(given))]
        config = engine_config(settings.scheduler)
        planned = offline.plan_manifests(
            manifests, clusters, config, now=now, extenders=extenders, placements=placements
        )
    except offline.PlanError as exc:
        raise bad_request(str(exc)) from exc
    return offline.as_list(planned)


def plan_with_extenders(
    uow: UnitOfWork, settings: Settings, posted: Sequence[Manifest], now: datetime
) -> Manifest:
    """``plan_live`` with the configured HTTP extenders, closed when the plan is done."""
    extenders = build_extenders(settings.scheduler.extenders)
    try:
        return plan_live(uow, settings, posted, now, extenders)
    finally:
        close_extenders(extenders)


def _stored_policies(session: Session) -> list[Manifest]:
    found: list[Manifest] = []
    for kind, api_version in STORED_KINDS:
        items, _ = ObjectRepository(session, kind, api_version).list()
        found += items
    return found


def _existing_bindings(session: Session, templates: Iterable[Manifest]) -> list[Manifest]:
    """The stored binding of each posted template (one lookup per template: a plan is a handful)."""
    repo = BindingRepository(session)
    found = []
    for template in templates:
        meta = template.get("metadata") or {}
        existing = repo.get(meta.get("namespace") or "", binding_name(meta["name"], template["kind"]))
        if existing is not None:
            found.append(existing)
    return found


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))


def _non_templates(given: offline.PlanInputs) -> list[Manifest]:
    return [*given.policies, *given.cluster_policies, *given.workload_policies, *given.bindings.values()]


def _overlay(stored: Sequence[Manifest], posted: Sequence[Manifest]) -> list[Manifest]:
    """Stored objects, each replaced by a posted one of the same identity, then the other posted ones."""
    given = {_identity(o): o for o in posted}
    merged = [given.pop(_identity(o), o) for o in stored]
    return [*merged, *given.values()]


def register(app: FastAPI, ctx: ApiContext) -> None:
    """Add the plan route."""

    close_extenders(build_extenders(ctx.settings.scheduler.extenders))  # refuse bad settings at start

    @app.post(PLAN_PATH, summary="Plan placements against live state (dry run, writes nothing)")
    async def plan(request: Request) -> JSONResponse:
        principal = authenticate(ctx, request)
        if principal.role not in PLAN_ROLES:
            raise forbidden(f'{principal.role} "{principal.name}" cannot plan')
        posted = items_of(await read_json(request))
        now = datetime.now(UTC)
        answer = await run_in_threadpool(plan_with_extenders, ctx.uow, ctx.settings, posted, now)
        return JSONResponse(answer)
