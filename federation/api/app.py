"""The HTTP surface: FastAPI app factory.

Routes: `/healthz`, `/readyz` (database reachable), `/version`, `/metrics`, `/openapi.json` without auth;
everything under `/api` and `/apis` with a Bearer token. Object paths are parsed by `paths` and served
generically by `objects`, so every kind (Karmada, Kosmos, any resource template) behaves the same.

The app does not import controllers: the process that runs both hands in `notify`, called with the kind
after every committed write so the right controller wakes early.

Every answer that is not a success is a Kubernetes Status (`errors`), including a database outage (503
with Retry-After, `outage`); request bodies are bounded and strict JSON (`bodies`).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

import federation
from federation.api import crds, discovery, errors, events, objects, patch, tables, watch
from federation.api.auth import authorize
from federation.api.bodies import BodyLimit, SafeJSONResponse
from federation.api.context import ApiContext, authenticate, authenticate_cached
from federation.api.extensions import register_extensions
from federation.api.metrics import MetricsMiddleware, RequestMetrics
from federation.api.patch_body import field_manager, read_body, write_options
from federation.api.paths import DiscoveryPath, ObjectPath, PathError, parse
from federation.api.status import StatusError, bad_request, method_not_allowed, not_found
from federation.model import kinds
from federation.store.db import ping

log = logging.getLogger(__name__)

TEMPLATE_NOTIFY_KIND = "ResourceTemplate"
# kube-apiserver retries such a write until it lands; a bound keeps a pathological hot spot from spinning.
UNCONDITIONAL_ATTEMPTS = 20


def create_app(ctx: ApiContext) -> FastAPI:
    app = FastAPI(title="federation", version=federation.__version__)
    app.state.ctx = ctx
    # Middleware added later wraps what was added before: metrics (outermost) count the 413s the body
    # limit answers and the 500/503s the error boundary (innermost) answers.
    errors.install(app, ctx.outage)
    app.add_middleware(BodyLimit, max_bytes=ctx.settings.api.max_request_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=RequestMetrics(ctx.registry))
    _health_routes(app, ctx)
    register_extensions(app, ctx)
    _resource_routes(app, ctx)
    return app


def _health_routes(app: FastAPI, ctx: ApiContext) -> None:
    @app.get("/healthz", include_in_schema=False)
    def healthz() -> Response:
        return Response("ok", media_type="text/plain")

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> Response:
        if ping(ctx.engine):
            ctx.outage.recovered()
            return Response("ok", media_type="text/plain")
        ctx.outage.failed("the readiness probe's ping got no answer")
        return Response("database unreachable", status_code=503, media_type="text/plain")

    @app.get("/version")
    def version() -> dict[str, str]:
        return {"gitVersion": f"v{federation.__version__}", "platform": "federation"}

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(ctx.registry), media_type=CONTENT_TYPE_LATEST)


def _resource_routes(app: FastAPI, ctx: ApiContext) -> None:
    async def core(request: Request, rest: str = "") -> Any:
        return await _serve(ctx, request, "api", rest)

    async def grouped(request: Request, rest: str = "") -> Any:
        return await _serve(ctx, request, "apis", rest)

    for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
        verb = method.lower()
        for prefix, handler, summary in (("/api", core, "core (v1)"), ("/apis", grouped, "grouped")):
            name = prefix.strip("/")
            app.add_api_route(prefix, handler, methods=[method], include_in_schema=False)
            app.add_api_route(
                f"{prefix}/{{rest:path}}",
                handler,
                methods=[method],
                operation_id=f"{verb}_{name}_objects",
                summary=f"{method} {summary} objects and discovery (Kubernetes REST paths)",
            )


async def _serve(ctx: ApiContext, request: Request, prefix: str, rest: str) -> Any:
    principal = authenticate_cached(ctx, request)  # on the loop: a cached token needs no worker thread
    if principal is None:
        principal = await run_in_threadpool(authenticate, ctx, request)
    rest, legacy_watch = watch.legacy_path(prefix, rest)
    try:
        target = parse(prefix, rest)
    except PathError as exc:
        raise StatusError(404, "NotFound", str(exc)) from exc
    if isinstance(target, DiscoveryPath):
        authorize(principal, request.method, None)
        return await run_in_threadpool(_discovery, ctx, target, request.method)
    authorize(principal, request.method, target)
    objects.resource_version(request.query_params.get("resourceVersion"), "resourceVersion")
    if watch.requested(request, legacy_watch):
        return await watch.serve(ctx, request, target)
    if request.method == "GET" and target.name is None:
        request.state.list_revision = await watch.list_revision(request)  # before the list is read
    body = await read_body(request)
    return await run_in_threadpool(_dispatch, ctx, request, target, body)


def _discovery(ctx: ApiContext, target: DiscoveryPath, method: str) -> Any:
    if method != "GET":
        raise method_not_allowed("discovery documents are read-only")
    if target.group is None and target.core:
        return discovery.api_versions()
    with ctx.uow() as session:
        registered = (*kinds.all_kinds(), *kinds.alias_kinds(), *crds.served_kinds(session))
        served = discovery.Served(registered, read_only=events.EVENT_KINDS)
    ctx.outage.recovered()
    if target.group is None:
        return served.api_group_list()
    document = (
        served.api_group(target.group)
        if target.version is None
        else served.api_resource_list(target.group, target.version)
    )
    if document is None:
        raise not_found("group", target.group)
    return document


def _dispatch(ctx: ApiContext, request: Request, target: ObjectPath, body: Any) -> Any:
    """Serve one call; an unconditional write that lost a race is served again on the new state (as
    kube-apiserver's GuaranteedUpdate does), so without a resourceVersion the last writer wins instead of
    getting a Conflict it never asked for."""
    attempts = UNCONDITIONAL_ATTEMPTS if _unconditional(request.method, body) else 1
    for attempt in range(1, attempts + 1):
        try:
            return _dispatch_once(ctx, request, target, body)
        except StatusError as err:
            if err.code != 409 or err.reason != "Conflict" or attempt == attempts:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def _unconditional(method: str, body: Any) -> bool:
    """A PUT or PATCH whose body names no resourceVersion (a JSON patch is a list: none either)."""
    if method not in ("PUT", "PATCH"):
        return False
    meta = body.get("metadata") if isinstance(body, dict) else None
    return not (isinstance(meta, dict) and meta.get("resourceVersion"))


def _dispatch_once(ctx: ApiContext, request: Request, target: ObjectPath, body: Any) -> Any:
    method = request.method
    with ctx.uow() as session:
        info = objects.resolve_kind(session, target)
        if target.namespace is not None and not info.namespaced:
            raise not_found(info.resource, target.name or "")
        if target.subresource == "status" and not info.has_status:
            raise not_found(f"{info.resource}/status", target.name or "")
        req = objects.Request(target, info, body, field_manager(request))
        result, status_code, wrote = _call(session, req, method, request)
        table = tables.requested_version(request.headers.get("accept")) if method == "GET" else None
        if table is not None and isinstance(result, dict):
            result = tables.as_table(session, info, result, table, request.query_params.get("includeObject"))
    # The token may have come from the cache: this unit of work is the request's proof the database answers.
    ctx.outage.recovered()
    if wrote:
        # Controllers watch Karmada kinds by name and resource templates as one kind, whatever theirs.
        ctx.notify(info.kind if kinds.is_federation_kind(info) else TEMPLATE_NOTIFY_KIND)
    response = SafeJSONResponse(
        result, status_code=status_code, media_type=tables.media_type(table) if table else None
    )
    if method in ("POST", "PUT") and target.subresource is None:
        for warning in objects.write_warnings(req):
            # RFC 7234 warn-code 299 (miscellaneous persistent warning), as kube-apiserver sends them.
            response.headers.append("Warning", f'299 - "{_quoted(warning)}"')
    return response


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _call(session: Any, req: objects.Request, method: str, request: Request) -> tuple[Any, int, bool]:
    path = req.path
    if method == "PATCH" or path.subresource == "scale":
        result, code = patch.serve(session, req, method, write_options(request))
        return result, code, method != "GET"
    if path.subresource == "status":
        if method == "GET":
            return objects.get_object(session, req), 200, False
        if method == "PUT":
            return objects.replace_status(session, req), 200, True
        raise method_not_allowed(f"{method} is not supported on the status subresource")
    if path.name is None:
        if method == "GET":
            params = request.query_params
            limit = _limit(params.get("limit"), ctx_page_max(request))
            listing = objects.list_objects(
                session, req, params.get("labelSelector"), limit, params.get("continue")
            )
            listing["metadata"]["resourceVersion"] = str(request.state.list_revision)
            return listing, 200, False
        if method == "POST":
            return objects.create_object(session, req), 201, True
        raise method_not_allowed(f"{method} needs an object name in the path")
    if method == "GET":
        return objects.get_object(session, req), 200, False
    if method == "PUT":
        result, created = objects.replace_object(session, req)
        return result, 201 if created else 200, True
    if method == "DELETE":
        return objects.delete_object(session, req), 200, True
    raise method_not_allowed(f"{method} is not supported on a named object; use PUT or DELETE")


def ctx_page_max(request: Request) -> int:
    ctx: ApiContext = request.app.state.ctx
    return ctx.settings.api.page_size_max


def _limit(text: str | None, maximum: int) -> int:
    """A page size: absent or 0 means the largest allowed page (lists are always paged)."""
    if text is None or text == "":
        return maximum
    try:
        value = int(text)
    except ValueError as exc:
        raise bad_request(f"limit must be an integer, got {text!r}") from exc
    if value < 0:
        raise bad_request("limit must not be negative")
    return min(value, maximum) if value else maximum
