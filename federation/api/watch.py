"""Watch: ``GET ...?watch=1&resourceVersion=N`` (and the legacy ``.../watch/...`` paths) streams the
changes of one kind as JSON lines ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}``.

Semantics (kube-apiserver's):
- ``resourceVersion`` N: every change after revision N, in revision order. Absent, "" or "0" (or
  ``sendInitialEvents=true``): the matching objects now, as ADDED, then every later change.
- N older than the change log keeps (``api.watch_window_seconds``): one ERROR event carrying a Status
  410 Expired, as kube-apiserver answers once etcd compacted; the client lists again.
- ``labelSelector``: an object that starts to match is ADDED, one that stops matching is DELETED.
  ``fieldSelector`` takes ``metadata.name`` and ``metadata.namespace`` (what ``kubectl get NAME -w`` sends).
- ``allowWatchBookmarks``: a BOOKMARK with the current revision when nothing else was sent for
  ``api.watch_bookmark_seconds``; with ``sendInitialEvents`` one right after the initial objects,
  annotated ``k8s.io/initial-events-end``.
- The stream ends after ``timeoutSeconds`` (default ``api.watch_timeout_seconds``), when the server stops,
  or when the client falls too far behind (it watches again from the last revision it saw).
- ``Accept: application/json;as=Table;...``: each event's object is a one-row Table (``kubectl get -w``).

Where events come from: the process's ``ChangeHub`` (live) and the change log itself (the past, between
N and where the hub was when this watch subscribed), each read in a session of its own.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from federation.api import objects, tables
from federation.api.context import ApiContext
from federation.api.paths import ObjectPath
from federation.api.status import StatusError, bad_request, not_found
from federation.api.watchhub import ChangeHub, Subscription
from federation.model import labels
from federation.model import tables as printing
from federation.model.kinds import KindInfo
from federation.store import changefeed
from federation.store.changefeed import ChangeEntry, Scope
from federation.store.kinds import table_for
from federation.store.tables.changelog import ADDED, DELETED, MODIFIED

TRUE = frozenset({"1", "true", "True"})
FIELDS = {"metadata.name": "name", "metadata.namespace": "namespace"}
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
HISTORY_PAGE = 500

Render = Callable[[dict[str, Any]], dict[str, Any]]


def legacy_path(prefix: str, rest: str) -> tuple[str, bool]:
    """``{group}/{version}/watch/...`` → the path without ``watch`` and True (the pre-1.11 watch paths)."""
    segments = rest.split("/")
    at = 1 if prefix == "api" else 2
    if len(segments) > at + 1 and segments[at] == "watch":
        return "/".join(segments[:at] + segments[at + 1 :]), True
    return rest, False


def requested(request: Request, legacy: bool = False) -> bool:
    return request.method == "GET" and (legacy or request.query_params.get("watch") in TRUE)


def hub_for(app: FastAPI, ctx: ApiContext) -> ChangeHub:
    hub = getattr(app.state, "watch_hub", None)
    if hub is None:
        hub = ChangeHub(ctx.uow, ctx.settings.api.watch_poll_seconds, ctx.stopping)
        app.state.watch_hub = hub
    return hub


async def list_revision(request: Request) -> int:
    """The resourceVersion a list reports: read before the list, so a watch from it misses nothing."""
    hub = hub_for(request.app, request.app.state.ctx)
    await hub.start()
    return await hub.current()


@dataclass(frozen=True, slots=True)
class Options:
    scope: Scope
    selector: labels.Selector | None
    start: int | None  # None: send the objects now first
    timeout: float
    bookmarks: bool
    initial_events_end: bool


def options(request: Request, info: KindInfo, target: ObjectPath) -> Options:
    params = request.query_params
    ctx: ApiContext = request.app.state.ctx
    fields = _field_selector(params.get("fieldSelector"), target)
    scope = Scope(
        info.api_version,
        info.kind,
        table_for(info.api_version, info.kind).match_api_version,
        fields.get("namespace", target.namespace),
        fields.get("name", target.name),
    )
    version = objects.resource_version(params.get("resourceVersion"), "resourceVersion")
    initial = params.get("sendInitialEvents") in TRUE
    return Options(
        scope=scope,
        selector=_label_selector(params.get("labelSelector")),
        start=None if initial or version in (None, "0") else int(str(version)),
        timeout=_timeout(params.get("timeoutSeconds"), ctx.settings.api.watch_timeout_seconds),
        bookmarks=params.get("allowWatchBookmarks") in TRUE,
        initial_events_end=initial,
    )


def _field_selector(text: str | None, target: ObjectPath) -> dict[str, str]:
    found: dict[str, str] = {}
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        key, operator, value = term.partition("==") if "==" in term else term.partition("=")
        if not operator or key.endswith("!") or key.strip() not in FIELDS:
            raise bad_request(
                f'"{term}" is not a supported field selector: use metadata.name=NAME or metadata.namespace=NS'
            )
        found[FIELDS[key.strip()]] = value.strip()
    # The path is what was authorized (an agent's own namespace): a selector may narrow it, never widen it.
    for key, in_path in (("name", target.name), ("namespace", target.namespace)):
        if in_path is not None and found.get(key, in_path) != in_path:
            raise bad_request(f"the fieldSelector names another {key} than the path")
    return found


def _label_selector(text: str | None) -> labels.Selector | None:
    if not text:
        return None
    try:
        return labels.parse_selector(text)
    except ValueError as exc:
        raise bad_request(f"unable to parse requirement: {exc}") from exc


def _timeout(text: str | None, default: float) -> float:
    if text in (None, ""):
        return default
    try:
        value = int(str(text))
    except ValueError as exc:
        raise bad_request(f"timeoutSeconds must be an integer, got {text!r}") from exc
    return value if value > 0 else default


def decide(opts: Options) -> Callable[[ChangeEntry], str | None]:
    """The event to send for a log entry (None: not this watch's), label selection changes included."""

    def event_of(entry: ChangeEntry) -> str | None:
        if not opts.scope.matches(entry):
            return None
        if opts.selector is None:
            return entry.event
        now = opts.selector.matches(_labels(entry.object))
        if entry.event == MODIFIED and entry.previous_labels is not None:
            before = opts.selector.matches(dict(entry.previous_labels))
            if now != before:
                return ADDED if now else DELETED
        return entry.event if now else None

    return event_of


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


async def serve(ctx: ApiContext, request: Request, target: ObjectPath) -> StreamingResponse:
    info, render = await run_in_threadpool(_resolve, ctx, request, target)
    opts = options(request, info, target)
    hub = hub_for(request.app, ctx)
    await hub.start()
    stream = _Stream(ctx, hub, info, opts, render)
    if opts.start is not None:
        oldest = await run_in_threadpool(_oldest_watchable, ctx)
        if opts.start < oldest:
            stream.expired = f"too old resource version: {opts.start} ({oldest + 1})"
    return StreamingResponse(stream.lines(), media_type="application/json")


def _resolve(ctx: ApiContext, request: Request, target: ObjectPath) -> tuple[KindInfo, Render]:
    with ctx.uow() as session:
        info = objects.resolve_kind(session, target)
        if (target.namespace is not None and not info.namespaced) or target.subresource is not None:
            raise not_found(info.resource, target.name or "")
        version = tables.requested_version(request.headers.get("accept"))
        if version is None:
            return info, lambda obj: obj
        columns = tables.columns(session, info)
    include = tables.include_object(request.query_params.get("includeObject"))

    def as_table(obj: dict[str, Any]) -> dict[str, Any]:
        rv = str(obj["metadata"].get("resourceVersion", ""))
        now = datetime.now(UTC)
        return printing.table(
            columns, [obj], now=now, include_object=include, version=version, resource_version=rv
        )

    return info, as_table


def _oldest_watchable(ctx: ApiContext) -> int:
    with ctx.uow() as session:
        return changefeed.oldest_watchable(session)


@dataclass
class _Stream:
    ctx: ApiContext
    hub: ChangeHub
    info: KindInfo
    opts: Options
    render: Render
    expired: str | None = None
    # Objects sent as ADDED at the start, by (namespace, name): their revision, so the same change is
    # not sent again when it also arrives as an event.
    listed: dict[tuple[str, str], int] = field(default_factory=dict)
    sent: int = 0  # the last revision sent (or known to be covered)

    async def lines(self) -> AsyncIterator[bytes]:
        if self.expired is not None:
            yield _line("ERROR", StatusError(410, "Expired", self.expired).body())
            return
        subscription = self.hub.subscribe(decide(self.opts))
        deadline = time.monotonic() + self.opts.timeout
        try:
            if self.opts.start is None:
                self.sent = subscription.position
                async for line in self._initial():
                    yield line
            else:
                self.sent = self.opts.start
                async for line in self._history(subscription.position):
                    yield line
            async for line in self._live(subscription, deadline):
                yield line
        finally:
            self.hub.unsubscribe(subscription)

    async def _initial(self) -> AsyncIterator[bytes]:
        token: str | None = None
        while not self.hub.stopped:
            page, token = await run_in_threadpool(self._list_page, token)
            for obj in page:
                meta = obj["metadata"]
                self.listed[(meta.get("namespace", ""), meta["name"])] = int(meta["resourceVersion"])
                yield _line(ADDED, self.render(obj))
            if token is None:
                break
        if self.opts.initial_events_end:
            # At the subscription's position: the events after it follow, none of them is skipped.
            yield self._bookmark(self.sent, {INITIAL_EVENTS_END: "true"})

    def _list_page(self, token: str | None) -> tuple[list[dict[str, Any]], str | None]:
        scope = self.opts.scope
        with self.ctx.uow() as session:
            repo = objects.repository(session, self.info)
            if scope.name is not None:
                found = repo.get(scope.namespace, scope.name)
                matches = found is not None and self._selected(found)
                return ([found] if found is not None and matches else []), None
            select = None if self.opts.selector is None else self.opts.selector.matches
            limit = self.ctx.settings.api.page_size_max
            return repo.list(scope.namespace, selector=select, limit=limit, continue_token=token)

    def _selected(self, obj: dict[str, Any]) -> bool:
        return self.opts.selector is None or self.opts.selector.matches(_labels(obj))

    async def _history(self, upto: int) -> AsyncIterator[bytes]:
        event_of = decide(self.opts)
        while self.sent < upto and not self.hub.stopped:
            page = await run_in_threadpool(self._history_page, upto)
            for entry in page:
                kind = event_of(entry)
                if kind is not None:
                    yield _line(kind, self.render(entry.object))
            self.sent = page[-1].revision if len(page) == HISTORY_PAGE else upto

    def _history_page(self, upto: int) -> list[ChangeEntry]:
        with self.ctx.uow() as session:
            return changefeed.history(session, self.sent, upto, self.opts.scope, HISTORY_PAGE)

    async def _live(self, subscription: Subscription, deadline: float) -> AsyncIterator[bytes]:
        bookmark_every = self.ctx.settings.api.watch_bookmark_seconds
        while (left := deadline - time.monotonic()) > 0:
            wait = min(left, bookmark_every) if self.opts.bookmarks else left
            try:
                item = await asyncio.wait_for(subscription.queue.get(), timeout=wait)
            except TimeoutError:
                if self.opts.bookmarks and time.monotonic() < deadline:
                    # Nothing queued: every event up to the hub's position was offered and sent or skipped.
                    yield self._bookmark(max(self.sent, self.hub.resolved))
                continue
            if item is None:  # the server stops, or this watch fell too far behind
                return
            kind, entry = item
            if entry.revision <= self.sent or self._already_listed(entry):
                continue
            self.sent = entry.revision
            yield _line(kind, self.render(entry.object))

    def _already_listed(self, entry: ChangeEntry) -> bool:
        listed = self.listed.get((entry.namespace, entry.name))
        return listed is not None and entry.revision <= listed

    def _bookmark(self, revision: int, annotations: dict[str, str] | None = None) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if annotations:
            meta["annotations"] = annotations
        return _line(
            "BOOKMARK", {"apiVersion": self.info.api_version, "kind": self.info.kind, "metadata": meta}
        )


def _line(kind: str, obj: dict[str, Any]) -> bytes:
    return (json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n").encode()
