"""Kubernetes ``Status`` errors raised by the simulator's store and rendered by its routes.

Invariant: every failure a client can see is an ``ApiError`` whose body is a ``meta/v1 Status`` with the
reason and code a real API server would use, so the official clients classify it the same way.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A failed request: HTTP ``code``, Kubernetes ``reason``, human ``message`` and optional details."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        kind: str = "",
        group: str = "",
        name: str = "",
        causes: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = {}
        if name:
            self.details["name"] = name
        if group:
            self.details["group"] = group
        if kind:
            self.details["kind"] = kind
        if causes:
            self.details["causes"] = causes

    def status(self) -> dict[str, Any]:
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 400 else "Success",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(plural, group)} "{name}" not found',
        kind=plural,
        group=group,
        name=name,
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    msg = f'{_qualified(plural, group)} "{name}" already exists'
    return ApiError(409, "AlreadyExists", msg, kind=plural, group=group, name=name)


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    msg = f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}'
    return ApiError(409, "Conflict", msg, kind=plural, group=group, name=name)


def invalid(kind: str, group: str, name: str, field: str, why: str) -> ApiError:
    msg = f'{kind} "{name}" is invalid: {field}: {why}'
    causes = [{"reason": "FieldValueInvalid", "message": why, "field": field}]
    return ApiError(422, "Invalid", msg, kind=kind, group=group, name=name, causes=causes)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unsupported_media(content_type: str) -> ApiError:
    return ApiError(
        415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {content_type}"
    )


def no_resource() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource: {method}"
    )
