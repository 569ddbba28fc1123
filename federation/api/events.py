"""Recorded Events, read as Kubernetes serves them: ``/api/v1[/namespaces/{ns}]/events[/{name}]`` (core/v1
``Event``, what ``kubectl describe`` lists) and the same under ``/apis/events.k8s.io/v1`` (``regarding``,
``note``, ``series``).

Invariants:
- Read-only: controllers record events (``store.events``); any other method is 405.
- An event about a cluster-scoped object lives in the ``default`` namespace, as kube-apiserver records it.
- Repeats are one event: ``count`` (``series.count``) and ``lastTimestamp`` (``series.lastObservedTime``)
  say how often and when last (``store.events`` deduplicates on record).
- ``fieldSelector`` takes kubectl's fields (``involvedObject.name=web,involvedObject.kind=Deployment``,
  ``regarding.*`` for events.k8s.io, ``type``, ``reason``, ``source``/``reportingController``, ``metadata.*``)
  with ``=``, ``==`` and ``!=``; an unknown field is a 400. Fields the table has a column for are compared
  in SQL; the others (apiVersion, fieldPath, metadata.*) on the page read, so a page can be short.
- A Table is served when asked for, with kube-apiserver's event columns.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from federation.api import tables
from federation.api.auth import authorize
from federation.api.bodies import SafeJSONResponse
from federation.api.context import ApiContext, authenticate
from federation.api.paths import ObjectPath
from federation.api.status import bad_request, method_not_allowed, not_found
from federation.model import kinds
from federation.model import tables as printing
from federation.model.kinds import KindInfo
from federation.model.tables_builtin import printer_for
from federation.store.events import CLUSTER_SCOPED_EVENT_NAMESPACE, Event, EventQuery, EventRepository

CORE = KindInfo("", "v1", "Event", "events", "event", ("ev",), namespaced=True, has_status=False)
EVENTS_V1 = KindInfo(
    "events.k8s.io", "v1", "Event", "events", "event", ("ev",), namespaced=True, has_status=False
)
EVENT_KINDS = (CORE, EVENTS_V1)
# Field selector labels → the store's query column (compared in SQL), per API.
_OBJECT_COLUMNS = {"kind": "kind", "namespace": "namespace", "name": "name", "uid": "uid"}
_COMMON_COLUMNS = {"type": "type", "reason": "reason"}
_CORE_COLUMNS = {
    **{f"involvedObject.{field}": column for field, column in _OBJECT_COLUMNS.items()},
    **_COMMON_COLUMNS,
    "source": "source",
    "reportingComponent": "source",
}
_V1_COLUMNS = {
    **{f"regarding.{field}": column for field, column in _OBJECT_COLUMNS.items()},
    **_COMMON_COLUMNS,
    "reportingController": "source",
    "deprecatedSource.component": "source",
}
# Labels compared on the rendered event (path in the answer's JSON).
_RENDERED = ("apiVersion", "fieldPath", "resourceVersion")
_META = {"metadata.name": ("metadata", "name"), "metadata.namespace": ("metadata", "namespace")}


@dataclass(frozen=True, slots=True)
class _Api:
    info: KindInfo
    render: Callable[[Event], dict[str, Any]]
    columns: Mapping[str, str]
    involved: str  # the JSON field naming the object an event is about


def register(app: FastAPI, ctx: ApiContext) -> None:
    for api in (
        _Api(CORE, core_event, _CORE_COLUMNS, "involvedObject"),
        _Api(EVENTS_V1, v1_event, _V1_COLUMNS, "regarding"),
    ):
        _routes(app, ctx, api)


def _routes(app: FastAPI, ctx: ApiContext, api: _Api) -> None:
    async def listing(request: Request, namespace: str | None = None) -> Response:
        await run_in_threadpool(_authorized, ctx, request, api, namespace, None)
        return await run_in_threadpool(_list, ctx, request, api, namespace)

    async def one(request: Request, namespace: str, name: str) -> Response:
        await run_in_threadpool(_authorized, ctx, request, api, namespace, name)
        return await run_in_threadpool(_get, ctx, request, api, namespace, name)

    async def refuse(request: Request) -> Response:
        raise method_not_allowed("events are recorded by the controllers and read-only through the API")

    base = api.info.path_prefix
    for path, handler in (
        (f"{base}/events", listing),
        (f"{base}/namespaces/{{namespace}}/events", listing),
        (f"{base}/namespaces/{{namespace}}/events/{{name}}", one),
    ):
        app.add_api_route(path, handler, methods=["GET"], include_in_schema=False)
        app.add_api_route(path, refuse, methods=["POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)


def _authorized(
    ctx: ApiContext, request: Request, api: _Api, namespace: str | None, name: str | None
) -> None:
    principal = authenticate(ctx, request)
    authorize(principal, "GET", ObjectPath(api.info.group, "v1", "events", namespace, name, None))


def _list(ctx: ApiContext, request: Request, api: _Api, namespace: str | None) -> Response:
    params = request.query_params
    if params.get("watch") not in (None, "", "0", "false"):
        raise method_not_allowed("watching events is not supported; list them again")
    comparisons, rendered = field_selector(params.get("fieldSelector"), api.columns)
    limit = _limit(params.get("limit"), ctx.settings.api.page_size_max)
    query = EventQuery(namespace, tuple(comparisons), decode_continue(params.get("continue")), limit)
    with ctx.uow() as session:
        found, after = EventRepository(session).list(query)
    items = [item for item in map(api.render, found) if all(test(item) for test in rendered)]
    metadata: dict[str, Any] = {"resourceVersion": ""}
    if after is not None:
        metadata["continue"] = encode_continue(after)
    answer = {"apiVersion": api.info.api_version, "kind": "EventList", "metadata": metadata, "items": items}
    return _answer(request, api, answer)


def _get(ctx: ApiContext, request: Request, api: _Api, namespace: str, name: str) -> Response:
    event_id = event_id_of(name)
    with ctx.uow() as session:
        event = EventRepository(session).get(event_id) if event_id is not None else None
    rendered = api.render(event) if event is not None else None
    if (
        rendered is None
        or rendered["metadata"]["name"] != name
        or rendered["metadata"]["namespace"] != namespace
    ):
        raise not_found("events", name)
    return _answer(request, api, rendered)


def _answer(request: Request, api: _Api, answer: dict[str, Any]) -> Response:
    version = tables.requested_version(request.headers.get("accept"))
    if version is None:
        return SafeJSONResponse(answer)
    listed = answer.get("kind") == "EventList"
    table = printing.table(
        printer_for(api.info.group, "Event"),
        answer["items"] if listed else [answer],
        now=datetime.now(UTC),
        include_object=tables.include_object(request.query_params.get("includeObject")),
        version=version,
        continue_token=answer["metadata"].get("continue") if listed else None,
    )
    return SafeJSONResponse(table, media_type=tables.media_type(version))


# -- field selectors, paging -------------------------------------------------------------------------


def field_selector(
    text: str | None, columns: Mapping[str, str]
) -> tuple[list[tuple[str, bool, str]], list[Callable[[Mapping[str, Any]], bool]]]:
    """(SQL comparisons, tests on the rendered event) for ``a=b,c!=d``; a 400 names an unknown field."""
    comparisons: list[tuple[str, bool, str]] = []
    rendered: list[Callable[[Mapping[str, Any]], bool]] = []
    for term in _terms(text or ""):
        label, equal, value = _term(term)
        if label in columns:
            comparisons.append((columns[label], equal, value))
        elif (path := _rendered_path(label, columns)) is not None:
            rendered.append(_compare(path, equal, value))
        else:
            supported = ", ".join(sorted([*columns, *_META]))
            raise bad_request(f'"{label}" is not a known field selector: only {supported}')
    return comparisons, rendered


def _compare(path: tuple[str, ...], equal: bool, value: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda item: (str(printing.get(item, *path) or "") == value) == equal


def _rendered_path(label: str, columns: Mapping[str, str]) -> tuple[str, ...] | None:
    if label in _META:
        return _META[label]
    prefix = "regarding" if "regarding.kind" in columns else "involvedObject"
    head, _, field = label.partition(".")
    return (prefix, field) if head == prefix and field in _RENDERED else None


def _terms(text: str) -> list[str]:
    """Split on commas that are not escaped (``\\,``), as Kubernetes' field selector parser does."""
    terms, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t.strip() for t in terms if t.strip()]


def _term(term: str) -> tuple[str, bool, str]:
    for operator, equal in (("!=", False), ("==", True), ("=", True)):
        label, found, value = term.partition(operator)
        if found:
            return label.strip(), equal, value.strip()
    raise bad_request(f"invalid field selector {term!r}: expected field=value, field==value or field!=value")


def _limit(text: str | None, maximum: int) -> int:
    try:
        value = int(text or 0)
    except ValueError as exc:
        raise bad_request(f"limit must be an integer, got {text!r}") from exc
    if value < 0:
        raise bad_request("limit must not be negative")
    return min(value, maximum) if value else maximum


def encode_continue(after_id: int) -> str:
    payload = json.dumps({"v": 1, "event": after_id}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


def decode_continue(token: str | None) -> int:
    if not token:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"invalid continue token {token!r}") from exc
    if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("event"), int):
        raise bad_request(f"invalid continue token {token!r}")
    return int(data["event"])


# -- rendering ---------------------------------------------------------------------------------------


def event_name(event: Event) -> str:
    """``<object>.<hex id>``, as kube's recorders name events (object name, then a unique suffix)."""
    return f"{event.involved.name or event.involved.kind.lower() or 'event'}.{event.id:x}"


def event_id_of(name: str) -> int | None:
    _, _, suffix = name.rpartition(".")
    try:
        return int(suffix, 16)
    except ValueError:
        return None


def _metadata(event: Event) -> dict[str, Any]:
    return {
        "name": event_name(event),
        "namespace": event.involved.namespace or CLUSTER_SCOPED_EVENT_NAMESPACE,
        "uid": str(
            uuid.uuid5(uuid.NAMESPACE_OID, f"federation-event-{event.id}-{event.first_timestamp.isoformat()}")
        ),
        "creationTimestamp": _time(event.first_timestamp),
    }


_API_VERSIONS = {info.kind: info.api_version for info in reversed(kinds.all_kinds())}


def _reference(event: Event) -> dict[str, Any]:
    involved = event.involved
    reference = {"kind": involved.kind, "name": involved.name}
    for key, value in (
        ("namespace", involved.namespace),
        ("uid", involved.uid),
        ("apiVersion", _API_VERSIONS.get(involved.kind, "")),
    ):
        if value:
            reference[key] = value
    return reference


def core_event(event: Event) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": _metadata(event),
        "involvedObject": _reference(event),
        "reason": event.reason,
        "message": event.message,
        "source": {"component": event.source} if event.source else {},
        "firstTimestamp": _time(event.first_timestamp),
        "lastTimestamp": _time(event.last_timestamp),
        "count": event.count,
        "type": event.type,
        "eventTime": None,
        "reportingComponent": event.source,
        "reportingInstance": "",
    }


def v1_event(event: Event) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": _metadata(event),
        "eventTime": _micro_time(event.first_timestamp),
        "reportingController": event.source,
        "reportingInstance": "",
        "reason": event.reason,
        "regarding": _reference(event),
        "note": event.message,
        "type": event.type,
        "deprecatedSource": {"component": event.source} if event.source else {},
        "deprecatedFirstTimestamp": _time(event.first_timestamp),
        "deprecatedLastTimestamp": _time(event.last_timestamp),
        "deprecatedCount": event.count,
    }
    if event.count > 1:
        answer["series"] = {"count": event.count, "lastObservedTime": _micro_time(event.last_timestamp)}
    return answer


def _time(stamp: datetime) -> str:
    return stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(stamp: datetime) -> str:
    return stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
