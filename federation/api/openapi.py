"""``/openapi/v3`` (index), ``/openapi/v3/{api|apis/group}/{version}`` and ``/openapi/v2``: the Kubernetes
OpenAPI documents of every served kind, read by ``kubectl explain`` (v3) and ``kubectl apply`` (v3: patch
types and server-side field validation). FastAPI's own ``/openapi.json`` describes the HTTP routes instead.

Invariants:
- Like kube-apiserver, the documents are for authenticated callers (any role: they hold no object data).
- The index lists every served group/version with a ``hash`` query parameter that changes whenever the
  document does (kubectl caches documents by URL); the document is served whatever hash is asked.
- ``/openapi/v2`` is Swagger 2.0 JSON built from the same documents. kubectl asks for it in protobuf only
  (``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``): that is a 406, after which kubectl
  does without (it validates on the server and builds patches for Kubernetes kinds from its own types).
- The registry's documents are built once per process; only applied CRDs' are built per request.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

import federation
from federation.api import crds
from federation.api.bodies import SafeJSONResponse
from federation.api.context import ApiContext, authenticate
from federation.api.status import StatusError, not_found
from federation.model import kinds
from federation.model.openapi import REF_PREFIX, ServedKind, group_version_document
from federation.model.validation import MODELS

Documents = dict[str, dict[str, Any]]
JSON_ACCEPTS = ("application/json", "application/*", "*/*")


def register(app: FastAPI, ctx: ApiContext) -> None:
    @app.get("/openapi/v3", include_in_schema=False)
    async def index(request: Request) -> Response:
        await run_in_threadpool(authenticate, ctx, request)
        documents = await run_in_threadpool(_documents, ctx)
        return SafeJSONResponse(v3_index(documents))

    @app.get("/openapi/v3/{path:path}", include_in_schema=False)
    async def group_version(request: Request, path: str) -> Response:
        await run_in_threadpool(authenticate, ctx, request)
        documents = await run_in_threadpool(_documents, ctx)
        if path.strip("/") not in documents:
            raise not_found("openapi document", path)
        return SafeJSONResponse(documents[path.strip("/")])

    @app.get("/openapi/v2", include_in_schema=False)
    async def v2(request: Request) -> Response:
        await run_in_threadpool(authenticate, ctx, request)
        accept = request.headers.get("accept") or "*/*"
        if not any(kind in accept for kind in JSON_ACCEPTS):
            message = "only application/json is served at /openapi/v2 (the v3 documents are complete)"
            raise StatusError(406, "NotAcceptable", message)
        documents = await run_in_threadpool(_documents, ctx)
        return SafeJSONResponse(swagger(documents.values()))


def _documents(ctx: ApiContext) -> Documents:
    with ctx.uow() as session:
        return {**registry_documents(), **crd_documents(session)}


def _path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@functools.cache
def registry_documents() -> Documents:
    """The documents of the registry's kinds (and alias paths): fixed for the life of the process."""
    grouped: dict[tuple[str, str], list[ServedKind]] = defaultdict(list)
    for info in (*kinds.all_kinds(), *kinds.alias_kinds()):
        model = MODELS.get(info.kind) if kinds.is_federation_kind(info) else None
        grouped[(info.group, info.version)].append(ServedKind(info, model))
    return {_path(g, v): group_version_document(g, v, served) for (g, v), served in sorted(grouped.items())}


def crd_documents(session: Session) -> Documents:
    """The documents of the kinds applied CRDs define, each with the schema its CRD declares."""
    grouped: dict[tuple[str, str], list[ServedKind]] = defaultdict(list)
    for info, entry in crds.served_versions(session):
        schema = (entry.get("schema") or {}).get("openAPIV3Schema")
        grouped[(info.group, info.version)].append(
            ServedKind(info, schema=schema if isinstance(schema, dict) else None)
        )
    return {_path(g, v): group_version_document(g, v, served) for (g, v), served in sorted(grouped.items())}


def v3_index(documents: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    paths = {
        path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={_digest(document)}"}
        for path, document in sorted(documents.items())
    }
    return {"paths": paths}


def _digest(document: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()


# -- Swagger 2.0 -------------------------------------------------------------------------------------


def swagger(documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One Swagger 2.0 document of every group/version (kube-apiserver's ``/openapi/v2`` shape)."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for document in documents:
        converted = json.loads(json.dumps(document).replace(f'"{REF_PREFIX}', '"#/definitions/'))
        for name, schema in converted["components"]["schemas"].items():
            definitions[name] = _v2_schema(schema)
        for path, item in converted["paths"].items():
            paths[path] = {
                verb: _v2_operation(op) if verb != "parameters" else _v2_params(op)
                for verb, op in item.items()
            }
    info = {"title": "Kubernetes", "version": f"v{federation.__version__}"}
    return {"swagger": "2.0", "info": info, "paths": dict(sorted(paths.items())), "definitions": definitions}


def _v2_schema(node: Any) -> Any:
    """Swagger 2.0 has no anyOf/oneOf/not/nullable: dropped, as kube-apiserver drops them from CRDs."""
    if isinstance(node, list):
        return [_v2_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: _v2_schema(v) for k, v in node.items() if k not in ("anyOf", "oneOf", "not", "nullable")}


def _v2_params(parameters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    converted = []
    for parameter in parameters:
        schema = parameter.get("schema") or {}
        entry = {k: v for k, v in parameter.items() if k != "schema"}
        converted.append({**entry, "type": schema.get("type", "string"), "uniqueItems": True})
    return converted


def _v2_operation(operation: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in operation.items() if k not in ("requestBody", "responses", "parameters")}
    parameters = _v2_params(operation.get("parameters") or [])
    body = operation.get("requestBody")
    if body is not None:
        content: dict[str, Any] = body.get("content") or {}
        out["consumes"] = list(content)
        first: dict[str, Any] = next(iter(content.values()), {})
        schema = first.get("schema", {"type": "object"})
        parameters.append({"name": "body", "in": "body", "required": True, "schema": schema})
    out["parameters"] = parameters
    out["produces"] = ["application/json"]
    ok = operation["responses"]["200"]
    out["responses"] = {
        "200": {"description": ok["description"], "schema": ok["content"]["application/json"]["schema"]}
    }
    return out
