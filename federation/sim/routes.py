"""Resource routes: map ``/api/v1/...`` and ``/apis/{group}/{version}/...`` requests onto the cluster verbs.

Invariants:
- The path grammar is Kubernetes': ``[namespaces/{ns}/]{plural}[/{name}[/{subresource}]]``; core
  ``namespaces/{name}[/status]`` addresses Namespace objects themselves.
- An unknown ``(group, plural)`` is registered on a write whose body names its kind (namespaced when written
  through a namespaced path); reads of an unknown resource are 404.
- Request bodies are JSON, or YAML for ``application/apply-patch+yaml``; responses are always JSON.
- ``fieldManager`` comes from the query, else the User-Agent's product token (as the API server derives it).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from federation import jsoncodec
from federation.model.patching import APPLY
from federation.sim import errors
from federation.sim.cluster import SimCluster
from federation.sim.kinds import ResourceType
from federation.sim.selectors import Predicate, field_selector, label_selector
from federation.sim.tables import table_for, wants_table
from federation.sim.watch import Cursor, bookmark, parse_resource_version, start, watch_stream


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource path names."""

    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_path(group: str, version: str, rest: str) -> Target:
    parts = [p for p in rest.split("/") if p]
    namespace: str | None = None
    if (
        group == ""
        and parts[:1] == ["namespaces"]
        and (len(parts) <= 2 or parts[2] in ("status", "finalize"))
    ):
        return Target(group, version, "namespaces", None, _at(parts, 1), _at(parts, 2))
    if parts[:1] == ["namespaces"] and len(parts) >= 3:
        namespace, parts = parts[1], parts[2:]
    if not parts or len(parts) > 3:
        raise errors.no_resource()
    return Target(group, version, parts[0], namespace, _at(parts, 1), _at(parts, 2))


def _at(parts: list[str], index: int) -> str | None:
    return parts[index] if len(parts) > index else None


def _yaml_or_json(raw: bytes) -> Any:
    """An apply body: YAML, of which JSON (what clients such as ours send) is the common case, read by the
    JSON parser (PyYAML's pure-Python one took a third of a simulated apply)."""
    try:
        return jsoncodec.loads(raw)
    except ValueError:
        return yaml.safe_load(raw)


async def _body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return None
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip()
    if "protobuf" in content_type or "cbor" in content_type:
        # client-go retries with JSON after a 415, so typed kubectl commands still work.
        raise errors.unsupported_media(content_type)
    try:
        if content_type == APPLY:
            return _yaml_or_json(raw)
        return jsoncodec.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the request body is not valid {content_type}: {exc}") from exc


def _manager(request: Request) -> str:
    given = request.query_params.get("fieldManager")
    if given:
        return given
    agent = request.headers.get("user-agent", "unknown")
    return agent.split("/")[0] or "unknown"


def _resolve(cluster: SimCluster, target: Target, body: Any) -> ResourceType:
    rtype = cluster.registry.lookup(target.group, target.plural)
    if rtype is not None:
        return rtype
    kind = body.get("kind") if isinstance(body, dict) else None
    if not kind:
        raise errors.no_resource()
    return cluster.registry.register(
        ResourceType(target.group, target.version, str(kind), target.plural, target.namespace is not None)
    )


def _json(obj: Any, status: int = 200) -> Response:
    # orjson: the standard library's encoder was a tenth of a member's CPU under a federation's applies.
    return Response(jsoncodec.dumps_bytes(obj), status_code=status, media_type="application/json")


async def handle(cluster: SimCluster, request: Request, group: str, version: str, rest: str) -> Response:
    target = parse_path(group, version, rest)
    method = request.method
    body = await _body(request) if method in ("POST", "PUT", "PATCH") else None
    rtype = _resolve(cluster, target, body if method in ("POST", "PUT", "PATCH") else None)
    if rtype.namespaced is False and target.namespace is not None:
        raise errors.no_resource()
    namespace = target.namespace or ""
    if target.subresource is not None:
        return _subresource(cluster, request, rtype, target, namespace, body)
    if target.name is None:
        return _collection(cluster, request, rtype, target, namespace, body)
    return _single(cluster, request, rtype, namespace, target.name, body)


def _collection(
    cluster: SimCluster, request: Request, rtype: ResourceType, target: Target, namespace: str, body: Any
) -> Response:
    query = request.query_params
    if request.method == "POST":
        return _json(cluster.create(rtype, namespace, body, _manager(request)), 201)
    match_l, match_f = label_selector(query.get("labelSelector")), field_selector(query.get("fieldSelector"))

    def match(obj: dict[str, Any]) -> bool:
        return match_l(obj) and match_f(obj)

    scope = target.namespace if rtype.namespaced else None
    if request.method == "DELETE":
        return _json(_list_body(cluster, rtype, cluster.delete_collection(rtype, scope, match), None))
    if request.method != "GET":
        raise errors.method_not_allowed(request.method)
    if _flag(query.get("watch")):
        return _watch(cluster, request, rtype, scope)
    if wants_table(request):
        items = cluster.list_objects(rtype, scope, match)
        return _json(table_for(rtype, items, cluster.clock(), cluster.store.resource_version))
    fields = match_f if query.get("fieldSelector") else None
    selector = query.get("labelSelector") or ""
    return _json(_paged(cluster, rtype, scope, selector, fields, query.get("limit"), query.get("continue")))


def _watch(cluster: SimCluster, request: Request, rtype: ResourceType, scope: str | None) -> Response:
    query = request.query_params
    timeout = float(query.get("timeoutSeconds") or 300)
    labels = label_selector(query["labelSelector"]) if query.get("labelSelector") else None
    fields = field_selector(query["fieldSelector"]) if query.get("fieldSelector") else None
    cursor = Cursor(rtype, scope, labels, fields, 0)
    initial = start(cluster, cursor, parse_resource_version(query.get("resourceVersion")))

    def as_table(obj: dict[str, Any]) -> dict[str, Any]:
        rv = obj["metadata"].get("resourceVersion", "")
        return table_for(rtype, [obj], cluster.clock(), rv)

    def table_mark(cursor: Cursor) -> dict[str, Any]:
        return table_for(rtype, [], cluster.clock(), str(cursor.rv))

    table = wants_table(request)
    marks = (table_mark if table else bookmark) if _flag(query.get("allowWatchBookmarks")) else None
    stopping = getattr(request.app.state, "stopping", lambda: False)
    events = watch_stream(
        cluster, cursor, initial, timeout, as_table if table else lambda obj: obj, marks, stopping
    )
    return StreamingResponse(events, media_type="application/json")


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _paged(
    cluster: SimCluster,
    rtype: ResourceType,
    scope: str | None,
    selector: str,
    fields: Predicate | None,
    limit: str | None,
    token: str | None,
) -> dict[str, Any]:
    """One page of a LIST (``limit``/``continue``). The token carries the first page's resourceVersion
    (every page reports it, as the API server's do, so a WATCH from it misses nothing the LIST did not
    show) and the key of the last object returned (the next page starts after it)."""
    version, after = _continuation(token)
    size = int(limit) if limit and limit.isdigit() and int(limit) > 0 else None
    page, remaining, now = cluster.list_page(rtype, scope, selector, fields, after, size)
    version = version or now
    next_token = None
    if remaining and page:
        meta = page[-1]["metadata"]
        last = [meta.get("namespace") or "", meta["name"]]
        next_token = base64.urlsafe_b64encode(json.dumps([version, *last]).encode()).decode()
    return _list_body(cluster, rtype, page, next_token, remaining, version)


def _continuation(token: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """(resourceVersion, last key) of a continue token; (None, None) for the first page. A token this
    server did not make is a 400, as the API server answers."""
    if not token:
        return None, None
    try:
        version, namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(version), (str(namespace), str(name))
    except (ValueError, TypeError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def _list_body(
    cluster: SimCluster,
    rtype: ResourceType,
    items: list[dict[str, Any]],
    token: str | None,
    remaining: int = 0,
    version: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": version or cluster.store.resource_version}
    if token:
        meta["continue"] = token
        meta["remainingItemCount"] = remaining
    return {"kind": f"{rtype.kind}List", "apiVersion": rtype.group_version, "metadata": meta, "items": items}


def _single(
    cluster: SimCluster, request: Request, rtype: ResourceType, namespace: str, name: str, body: Any
) -> Response:
    method = request.method
    if method == "GET":
        obj = cluster.get(rtype, namespace, name)
        if wants_table(request):
            return _json(table_for(rtype, [obj], cluster.clock(), obj["metadata"]["resourceVersion"]))
        return _json(obj)
    if method == "PUT":
        obj, created = cluster.replace(rtype, namespace, name, body, _manager(request))
        return _json(obj, 201 if created else 200)
    if method == "PATCH":
        content_type = request.headers.get("content-type", "").split(";")[0].strip()
        if content_type == APPLY and not request.query_params.get("fieldManager"):
            raise errors.bad_request("PATCH requests with apply content type require fieldManager")
        force = request.query_params.get("force", "false").lower() == "true"
        obj, created = cluster.patch(rtype, namespace, name, content_type, body, _manager(request), force)
        return _json(obj, 201 if created else 200)
    if method == "DELETE":
        return _json(cluster.delete(rtype, namespace, name))
    raise errors.method_not_allowed(method)


def _subresource(
    cluster: SimCluster, request: Request, rtype: ResourceType, target: Target, namespace: str, body: Any
) -> Response:
    name, sub, method = target.name or "", target.subresource, request.method
    if sub not in rtype.subresources and not (sub == "status" and rtype.kind == "Namespace"):
        raise errors.no_resource()
    content_type = "" if method == "PUT" else request.headers.get("content-type", "").split(";")[0].strip()
    if sub == "scale":
        if method == "GET":
            return _json(cluster.scale(rtype, namespace, name))
        if method in ("PUT", "PATCH"):
            return _json(cluster.write_scale(rtype, namespace, name, content_type, body, _manager(request)))
    elif method == "GET":
        return _json(cluster.get(rtype, namespace, name))
    elif method in ("PUT", "PATCH"):
        return _json(cluster.write_status(rtype, namespace, name, content_type, body))
    raise errors.method_not_allowed(method)
