"""The simulator's ASGI application: health, version, discovery, resources, and the ``/_sim`` admin API.

Invariants:
- Every Kubernetes path (everything but ``/_sim/...``) goes through the same guard, in this order: added
  latency, ``down`` (503 for everything, health included), bearer-token auth (401), then the flaky error
  rate (500). Errors are always ``Status`` bodies.
- The admin endpoints take the same bearer token but ignore every fault, so a test can always heal a
  member it broke.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from federation.sim import discovery, errors, openapi
from federation.sim.cluster import SimCluster
from federation.sim.config import Faults
from federation.sim.pods import is_ready, node_name
from federation.sim.routes import handle
from federation.sim.selectors import field_selector

Handler = Callable[[Request], Awaitable[Response]]


def _status_response(err: errors.ApiError) -> Response:
    return JSONResponse(err.status(), status_code=err.code)


def _authorized(request: Request, token: str) -> bool:
    return request.headers.get("authorization", "") == f"Bearer {token}"


class SimApp:
    """Routes bound to one cluster, its faults and its token."""

    def __init__(self, cluster: SimCluster, faults: Faults, token: str) -> None:
        self.cluster = cluster
        self.faults = faults
        self.token = token

    def kube(self, handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            if self.faults.latency_ms:
                await asyncio.sleep(self.faults.latency_ms / 1000)
            try:
                self._check(request)
                return await handler(request)
            except errors.ApiError as err:
                return _status_response(err)

        return guarded

    def _check(self, request: Request) -> None:
        if self.faults.down:
            raise errors.ApiError(
                503, "ServiceUnavailable", "the server is currently unable to handle the request"
            )
        if not _authorized(request, self.token):
            raise errors.ApiError(401, "Unauthorized", "Unauthorized")
        if self.faults.roll_error():
            raise errors.ApiError(
                500, "InternalError", "Internal error occurred: simulated failure (error rate)"
            )

    # --- plain endpoints -------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def version(self, request: Request) -> Response:
        return JSONResponse(discovery.version_info(self.cluster.config.kubernetes_version))

    async def api(self, request: Request) -> Response:
        return JSONResponse(discovery.api_versions(f"{request.url.hostname}:{request.url.port}"))

    async def api_v1(self, request: Request) -> Response:
        return JSONResponse(discovery.resource_list(self.cluster.registry, "", "v1"))

    async def apis(self, request: Request) -> Response:
        return JSONResponse(discovery.api_group_list(self.cluster.registry))

    async def api_group(self, request: Request) -> Response:
        found = discovery.api_group(self.cluster.registry, request.path_params["group"])
        if found is None:
            raise errors.no_resource()
        return JSONResponse(found)

    async def group_version(self, request: Request) -> Response:
        params = request.path_params
        found = discovery.resource_list(self.cluster.registry, params["group"], params["version"])
        if found is None:
            raise errors.no_resource()
        return JSONResponse(found)

    async def core_resource(self, request: Request) -> Response:
        return await handle(self.cluster, request, "", "v1", request.path_params["rest"])

    async def group_resource(self, request: Request) -> Response:
        params = request.path_params
        return await handle(self.cluster, request, params["group"], params["version"], params["rest"])

    async def openapi_index(self, request: Request) -> Response:
        return JSONResponse(openapi.index(self.cluster.registry))

    async def openapi_document(self, request: Request) -> Response:
        parts = request.path_params["rest"].split("/")
        group, version = (parts[1], parts[2]) if parts[0] == "apis" and len(parts) == 3 else ("", parts[-1])
        if parts[0] not in ("api", "apis") or len(parts) not in (2, 3):
            raise errors.no_resource()
        found = openapi.group_version_document(self.cluster.registry, group, version)
        if found is None:
            raise errors.no_resource()
        return JSONResponse(found)

    async def not_found(self, request: Request) -> Response:
        raise errors.no_resource()

    # --- admin -----------------------------------------------------------------------------------

    async def admin_faults(self, request: Request) -> Response:
        if not _authorized(request, self.token):
            return _status_response(errors.ApiError(401, "Unauthorized", "Unauthorized"))
        if request.method == "POST":
            try:
                changes = json.loads(await request.body() or b"{}")
                if not isinstance(changes, dict):
                    raise ValueError("the body must be a JSON object")
                self.faults.update(changes)
            except ValueError as exc:
                return _status_response(errors.bad_request(str(exc)))
        return JSONResponse(self.faults.snapshot())

    async def admin_state(self, request: Request) -> Response:
        if not _authorized(request, self.token):
            return _status_response(errors.ApiError(401, "Unauthorized", "Unauthorized"))
        return JSONResponse(self.state())

    def state(self) -> dict[str, Any]:
        """A compact view for humans and tests: faults, nodes, and every pod's node and readiness."""
        pods_type = self.cluster.registry.lookup("", "pods")
        nodes_type = self.cluster.registry.lookup("", "nodes")
        assert pods_type is not None and nodes_type is not None
        everything = field_selector("")
        pods = self.cluster.list_objects(pods_type, None, everything)
        return {
            "name": self.cluster.config.name,
            "resourceVersion": self.cluster.store.resource_version,
            "faults": self.faults.snapshot(),
            "nodes": [n["metadata"]["name"] for n in self.cluster.list_objects(nodes_type, None, everything)],
            "pods": [
                {
                    "namespace": p["metadata"].get("namespace", ""),
                    "name": p["metadata"]["name"],
                    "node": node_name(p),
                    "ready": is_ready(p),
                }
                for p in pods
            ],
        }


def build_app(cluster: SimCluster, faults: Faults, token: str) -> Starlette:
    sim = SimApp(cluster, faults, token)
    kube = sim.kube
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    routes = [
        Route("/_sim/faults", sim.admin_faults, methods=["GET", "POST"]),
        Route("/_sim/state", sim.admin_state, methods=["GET"]),
        *(Route(p, kube(sim.health), methods=["GET"]) for p in ("/healthz", "/readyz", "/livez")),
        Route("/version", kube(sim.version), methods=["GET"]),
        Route("/api", kube(sim.api), methods=["GET"]),
        Route("/api/v1", kube(sim.api_v1), methods=["GET"]),
        Route("/api/v1/{rest:path}", kube(sim.core_resource), methods=methods),
        Route("/apis", kube(sim.apis), methods=["GET"]),
        Route("/apis/{group}", kube(sim.api_group), methods=["GET"]),
        Route("/apis/{group}/{version}", kube(sim.group_version), methods=["GET"]),
        Route("/apis/{group}/{version}/{rest:path}", kube(sim.group_resource), methods=methods),
        Route("/openapi/v3", kube(sim.openapi_index), methods=["GET"]),
        Route("/openapi/v3/{rest:path}", kube(sim.openapi_document), methods=["GET"]),
        Route("/{rest:path}", kube(sim.not_found), methods=methods),
    ]
    app = Starlette(routes=routes)
    app.state.sim = sim
    return app
