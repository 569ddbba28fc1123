"""Errors the store raises; the API maps each to a Kubernetes ``Status`` reason.

Every error carries the object's kind and name (and namespace when it has one) both as attributes and in
its message, so a log line or an HTTP body names the object without the caller adding context.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of everything the store raises on purpose."""


class ObjectError(StoreError):
    """An error about one named object."""

    reason = "StoreError"

    def __init__(self, kind: str, namespace: str, name: str, detail: str = "") -> None:
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.detail = detail
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        text = f'{self.kind} "{where}" {self._verb()}'
        return f"{text}: {self.detail}" if self.detail else text

    def _verb(self) -> str:
        return "failed"


class NotFound(ObjectError):
    reason = "NotFound"

    def _verb(self) -> str:
        return "not found"


class AlreadyExists(ObjectError):
    reason = "AlreadyExists"

    def _verb(self) -> str:
        return "already exists"


class Conflict(ObjectError):
    """The object changed since the caller read it (stale resourceVersion, or a concurrent writer won)."""

    reason = "Conflict"

    def _verb(self) -> str:
        return "was modified concurrently; read it again and retry"


class InvalidContinueToken(StoreError, ValueError):
    """A list continue token that this store did not issue (or issued for another listing)."""


class MigrationsNotFound(StoreError):
    """The Alembic environment (``migrations/``) is not next to the package."""


class DecryptionError(StoreError):
    """A stored secret cannot be decrypted with the configured key (wrong or rotated key)."""
