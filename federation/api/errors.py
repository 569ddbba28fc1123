"""Every error the API answers is a Kubernetes `Status` (never FastAPI's `{"detail": ...}`, never plain text).

- A ``StatusError`` raised anywhere is its own answer.
- An HTTP error from the framework (the router's 404 for a path nothing serves, 405 for a method a path
  does not serve) becomes a Status with Kubernetes' reason for its code, keeping its headers (``Allow``).
- A request parameter of the wrong type (``RequestValidationError``) is 400 BadRequest, one cause per field.
- Anything else that escapes a route is caught by ``ErrorBoundary``, the innermost middleware: a database
  outage is 503 ServiceUnavailable with ``Retry-After`` (logged once per outage, see ``outage``); any other
  exception is 500 InternalError and its traceback is logged exactly once, here (the HTTP server never
  sees the exception, so it does not log it again). An error after the answer started cannot be answered;
  it is left to the server, which closes the connection.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from federation.api.outage import DatabaseOutage, describe, is_unavailable
from federation.api.status import StatusError, for_code, internal_error

log = logging.getLogger(__name__)


def install(app: FastAPI, outage: DatabaseOutage) -> None:
    """Answer every error of ``app`` with a Status. Call before adding other middleware: the boundary must
    be the innermost one, so that outer middleware (metrics) sees the 500/503 it answers."""
    app.add_exception_handler(StatusError, _status_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_middleware(ErrorBoundary, outage=outage)


async def _status_error(_request: Request, exc: StatusError) -> Response:
    return exc.response()


async def _http_error(request: Request, exc: HTTPException) -> Response:
    return for_code(exc.status_code, _http_message(request, exc)).response(exc.headers)


def _http_message(request: Request, exc: HTTPException) -> str:
    """The framework's own words when it gave some, else Kubernetes' words for the code."""
    phrase = _phrase(exc.status_code)
    if isinstance(exc.detail, str) and exc.detail != phrase:
        return exc.detail
    if exc.status_code == 404:
        return f"the server could not find the requested resource ({request.url.path})"
    if exc.status_code == 405:
        return f"{request.method} is not supported on {request.url.path}"
    return phrase or f"HTTP {exc.status_code}"


def _phrase(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:  # a code HTTP does not define
        return ""


async def _validation_error(_request: Request, exc: RequestValidationError) -> Response:
    causes = [_cause(error) for error in exc.errors()]
    message = "; ".join(f"{c['field']}: {c['message']}" for c in causes) or "the request is not valid"
    return StatusError(400, "BadRequest", message, causes=causes).response()


def _cause(error: dict[str, Any]) -> dict[str, str]:
    # loc is ("query" | "path" | "header" | "body", name, ...): the name is what the client wrote.
    location = [str(part) for part in error.get("loc", ())]
    field = ".".join(location[1:]) or ".".join(location)
    return {"field": field, "message": str(error.get("msg", "")), "reason": "FieldValueInvalid"}


class ErrorBoundary:
    """ASGI middleware: whatever escapes the app becomes a Status answer (see the module docstring)."""

    def __init__(self, app: ASGIApp, outage: DatabaseOutage) -> None:
        self.app = app
        self.outage = outage

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if started:
                raise
            await self._status(scope, exc).response()(scope, receive, send)

    def _status(self, scope: Scope, exc: Exception) -> StatusError:
        if isinstance(exc, StatusError):
            return exc
        if is_unavailable(exc):
            return self.outage.failed(describe(exc))
        log.error("%s %s failed", scope.get("method"), scope.get("path"), exc_info=exc)
        return internal_error()
