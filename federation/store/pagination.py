"""Opaque list continue tokens: keyset pagination over (namespace, name).

A token is the key of the last item of the previous page, so a page is "the next ``limit`` matching rows
after that key": exact even when a label selector is applied in Python and stable when rows are
added or removed between pages (unlike OFFSET). Unlike Kubernetes it is not a consistent snapshot:
rows changed between pages are seen as they are now.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from federation.store.errors import InvalidContinueToken

_VERSION = 1


@dataclass(frozen=True, slots=True)
class Cursor:
    namespace: str
    name: str


def encode(cursor: Cursor) -> str:
    payload = json.dumps({"v": _VERSION, "ns": cursor.namespace, "n": cursor.name}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode(token: str) -> Cursor:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise InvalidContinueToken(f"invalid continue token {token!r}") from exc
    if not _well_formed(data):
        raise InvalidContinueToken(f"invalid continue token {token!r}")
    return Cursor(namespace=data["ns"], name=data["n"])


def _well_formed(data: object) -> bool:
    return (
        isinstance(data, dict)
        and data.get("v") == _VERSION
        and isinstance(data.get("ns"), str)
        and isinstance(data.get("n"), str)
    )
