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


def canonical(value: Any) -> bytes:
    """Sorted compact JSON, byte for byte the standard library's ``json.dumps(value, sort_keys=True,
    separators=(",", ":"))`` (what stored digests were made with), written by orjson wherever its bytes are
    those: ASCII text, integers and all but small floats, several times faster. Where they may differ
    (``_may_differ``) or orjson refuses the value, the standard library writes it. NaN and the infinities,
    which no API write can store, are the exception: orjson writes them as null."""
    try:
        encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer past 64 bits, a key that is not a string
        encoded = b""
    if not encoded or _may_differ(encoded):
        encoded = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return encoded


def compact(value: Any) -> str:
    """Compact JSON in the value's own key order, byte for byte the standard library's ``json.dumps(value,
    separators=(",", ":"))`` (what stored annotations were written with), by orjson where its bytes are those
    (the rule of ``canonical``)."""
    try:
        encoded = orjson.dumps(value)
    except TypeError:
        encoded = b""
    if not encoded or _may_differ(encoded):
        return json.dumps(value, separators=(",", ":"))
    return encoded.decode()


def _may_differ(encoded: bytes) -> bool:
    """Whether orjson's compact JSON may differ from the standard library's: non-ASCII text and DEL (which
    the standard library escapes as \\uXXXX), and small floats (orjson writes 1e-05 as 0.00001 and 2.5e-07
    as 2.5e-7: ".0000", or "e-" after a digit; every other finite float is written alike). The same bytes
    inside a string only send that value to the standard library, which is always right. Substring
    searches, not a regular expression: one costs more than orjson's whole encoding."""
    if not encoded.isascii() or b"\x7f" in encoded or b".0000" in encoded:
        return True
    at = encoded.find(b"e-")
    while at > 0:
        if 48 <= encoded[at - 1] <= 57:  # after a digit: an exponent, or text that looks like one
            return True
        at = encoded.find(b"e-", at + 2)
    return False


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


__all__ = ["canonical", "dumps", "dumps_bytes", "kept", "loads"]
