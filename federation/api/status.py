"""Kubernetes `Status` error bodies: every non-2xx answer of the API is one of these.

`reason` follows Kubernetes (metav1.StatusReason); `details.causes[].field` names each bad field of an
Invalid object, so a client can show every problem at once.
"""

from __future__ import annotations

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

    def body(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.kind is not None:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = self.causes
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

    def response(self) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.code == 401 else None
        return JSONResponse(self.body(), status_code=self.code, headers=headers)


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
