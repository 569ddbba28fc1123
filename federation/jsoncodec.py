"""JSON to text and back: orjson, with the standard library's rules kept. Used by the store (its JSON
columns) and the member clients (their response bodies); outside the layers, it depends on nothing of ours.

Why: every write serialises whole manifests (a binding, a Work, a scheduling decision's per-cluster
explanation) and every read parses them; orjson does both in C, ~12x faster to write and ~2x to read a
decision record than ``json``. The status collection decodes every managed object of every member each
interval (a 500-Deployment LIST page: 21.3 ms by ``json``, 14.8 ms by orjson).
Where orjson refuses a value the standard library accepts (keys that are not strings, integers beyond
64 bits, NaN) the standard library answers, so what is stored or read never depends on which of the two
ran.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> str:
    return dumps_bytes(value).decode()


def dumps_bytes(value: Any) -> bytes:
    """``dumps`` as UTF-8 bytes (an HTTP body), without a round trip through ``str``."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


def kept(encoded: bytes) -> bytes:
    """A copy of ``encoded`` in memory of its own size, for an encoding that is kept (an informer's
    projection of each member object): orjson returns its bytes in the buffer it wrote them into, ~4 KB
    whatever the length, so 30,000 kept projections of ~200 bytes held 120 MB instead of 6."""
    return bytes(memoryview(encoded))


def loads(text: str | bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


__all__ = ["dumps", "dumps_bytes", "kept", "loads"]
