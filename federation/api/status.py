"""Kubernetes `Status` error bodies: every non-2xx answer of the API is one of these.

`reason` follows Kubernetes (metav1.StatusReason); `details.causes[].field` names each bad field of an
Invalid object, so a client can show every problem at once. An answer that asks the client to come back
later (503) says when, both as a `Retry-After` header and as `details.retryAfterSeconds`, as
kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi.responses import JSONResponse


@dataclass(slots=True)
class StatusError(Exception):
    code: int
    reason: str
    message: str
    kind: str | None = None
    name: str | None = None
    causes: list[dict[str, str]] = field(default_factory=list)
    retry_after: int | None = None

    def body(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.kind is not None:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = self.causes
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            body["details"] = details
        return body

    def response(self, headers: Mapping[str, str] | None = None) -> JSONResponse:
        """The HTTP answer; ``headers`` are added (an HTTP error's own, e.g. ``Allow`` on a 405)."""
        sent = dict(headers or {})
        if self.code == 401:
            sent["WWW-Authenticate"] = "Bearer"
        if self.retry_after is not None:
            sent["Retry-After"] = str(self.retry_after)
        return JSONResponse(self.body(), status_code=self.code, headers=sent or None)


# metav1.StatusReason per HTTP code, for errors that arrive as a bare code (the router's 404/405, ...).
REASONS: Mapping[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def for_code(code: int, message: str) -> StatusError:
    """A Status for an HTTP code; Kubernetes' reason for it ("" — StatusReasonUnknown — if it has none)."""
    return StatusError(code, REASONS.get(code, ""), message)


def not_found(resource: str, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{resource} "{name}" not found', kind=resource, name=name)


def already_exists(resource: str, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{resource} "{name}" already exists', kind=resource, name=name)


def conflict(resource: str, name: str) -> StatusError:
    message = (
        f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    return StatusError(409, "Conflict", message, kind=resource, name=name)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def forbidden(message: str) -> StatusError:
    return StatusError(403, "Forbidden", message)


def method_not_allowed(message: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def too_large(limit: int) -> StatusError:
    message = f"the request body is larger than the limit of {limit} bytes"
    return StatusError(413, "RequestEntityTooLarge", message)


def unavailable(message: str, retry_after: int) -> StatusError:
    return StatusError(503, "ServiceUnavailable", message, retry_after=retry_after)


def internal_error() -> StatusError:
    # The cause stays in the server log: a traceback may name tables, paths or values a client must not see.
    return StatusError(500, "InternalError", "an internal error occurred; the server log has the details")


def invalid(kind: str, name: str, causes: list[dict[str, str]]) -> StatusError:
    summary = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
    return StatusError(422, "Invalid", f'{kind} "{name}" is invalid: {summary}', kind, name, causes)


def success(kind: str, name: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "kind": kind},
    }
