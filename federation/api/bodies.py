"""JSON bodies: what the API reads is strict JSON, what it writes is always valid JSON.

Reading (every route that takes a body), as kube-apiserver does:
- The body is at most `api.max_request_body_bytes` (3 MiB by default, kube-apiserver's --max-request-bytes).
  `BodyLimit` answers 413 RequestEntityTooLarge before reading when Content-Length says more, and stops a
  body without Content-Length (chunked) as soon as the bytes received pass the limit: no route ever holds
  more than the limit in memory.
- The text is UTF-8 (not UTF-16/32, which the stdlib would guess from the bytes); JSON as RFC 8259 says:
  no NaN, Infinity or -Infinity, no number too large for a double (1e400); no string (object keys
  included) holding NUL (\\u0000: Postgres cannot store it) or a lone UTF-16 surrogate (\\ud800: not a
  character, it cannot be encoded back).
- Nesting is at most `MAX_DEPTH` levels, measured before parsing and without recursion, so the recursive
  stdlib parser and every recursive consumer after it (copy.deepcopy, json.dumps, comparisons) stay far
  inside Python's recursion limit. 100,000 `[` or data nested 5,000 deep is a 400, not a RecursionError.
- Each refusal is a 400 BadRequest Status naming the problem (and where, for a bad string). A body over
  `INLINE_BODY_BYTES` is checked in the thread pool: a few MiB of them must not stall the event loop. A
  smaller one (an object of a few KB: almost every write) is checked on the loop, where it takes tens of
  microseconds, less than handing it to a worker thread and back.

Writing: `SafeJSONResponse` renders what was stored before these checks existed (NaN, lone surrogates on
SQLite) as valid JSON (null, U+FFFD) instead of failing the whole answer.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from itertools import accumulate, repeat
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from federation.api.status import bad_request, too_large

log = logging.getLogger(__name__)

# Far deeper than any Kubernetes object (a CRD's openAPIV3Schema nests about 40 levels), and shallow enough
# that copy.deepcopy (two frames a level) stays well inside Python's default recursion limit of 1000.
MAX_DEPTH = 256
# Bodies up to this size are parsed on the event loop (well under a millisecond), larger ones in the pool.
INLINE_BODY_BYTES = 64 * 1024

# Strings (escapes included) and runs of anything that is neither a bracket nor a quote: removing them
# leaves the brackets that are structure, never a bracket inside a string. An unterminated string runs to
# the end (its closing quote is optional): the parser reads it the same way and fails there, before any
# bracket after it, and a string match that always succeeds keeps the scan linear (a required closing
# quote made `"\"\"\"...` quadratic).
_NOT_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[^\[\]{}"]+', re.DOTALL)
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# In text that is valid UTF-8, NUL and surrogates can only be spelled as JSON escapes. A NUL escape is
# `\u0000` whose backslash follows an even run of backslashes (after an odd run, it is the second half of
# an escaped backslash and "u0000" is text): exact, so the walk that names the field runs only for a body
# that is refused.
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


# -- reading ---------------------------------------------------------------------------------------


async def read_json(request: Request) -> Any:
    """The request body as strict JSON; 400 BadRequest when it is empty or not acceptable."""
    return await parse_json_body(await request.body())


async def parse_json_body(raw: bytes) -> Any:
    """``parse_json`` on the event loop for a body up to ``INLINE_BODY_BYTES``, in the pool beyond."""
    if len(raw) <= INLINE_BODY_BYTES:
        return parse_json(raw)
    return await run_in_threadpool(parse_json, raw)


def parse_json(raw: bytes) -> Any:
    """Strict JSON from bytes (see the module docstring); raises a 400 ``StatusError``."""
    if not raw:
        raise bad_request("the request body is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad_request(f"the request body is not valid UTF-8: {exc.reason} at byte {exc.start}") from exc
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise bad_request(f"the request body nests {depth} levels deep; at most {MAX_DEPTH} are allowed")
    try:
        document = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except ValueError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from exc
    _check_strings(text, document)
    return document


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (0 for a scalar), computed without recursion."""
    structure = _NOT_STRUCTURE.sub("", text)
    return max(accumulate(map(_DEPTH_STEP.get, structure, repeat(0))), default=0)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is out of range")
    return value


def _check_strings(text: str, document: Any) -> None:
    """400 naming the first string (object keys included) that holds NUL or a lone surrogate."""
    if _NUL_ESCAPE.search(text):
        path = _path_of_string(document, lambda value: "\x00" in value)
        raise bad_request(f"{_shown(path)}: a string must not contain NUL (\\u0000)")
    # Paired surrogate escapes decode to one character; only a lone one survives, and UTF-8 cannot encode it.
    if _SURROGATE_ESCAPE.search(text) and not _encodable(document):
        path = _path_of_string(document, lambda value: _SURROGATE.search(value) is not None)
        raise bad_request(f"{_shown(path)}: a string must not contain a lone UTF-16 surrogate")


def _encodable(document: Any) -> bool:
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _path_of_string(document: Any, bad: Callable[[str], bool]) -> str:
    """The field path of the first string (or key) that is ``bad``, walked without recursion; a path
    string is built only for containers and the bad string, not for every value."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str) and bad(value):
            return path
        if isinstance(value, dict):
            for key, item in value.items():
                child = f"{path}.{key}" if path else key
                if bad(key):
                    return child
                if isinstance(item, str | dict | list):
                    stack.append((child, item))
        elif isinstance(value, list):
            stack.extend(
                (f"{path}[{i}]", item) for i, item in enumerate(value) if isinstance(item, str | dict | list)
            )
    return ""


def _shown(path: str) -> str:
    # JSON-escaped: the path itself may hold the NUL or surrogate (a bad key) the message is about.
    return json.dumps(path) if path else "the body"


# -- the size limit --------------------------------------------------------------------------------


class BodyLimit:
    """ASGI middleware: refuse request bodies larger than ``max_bytes`` with 413 RequestEntityTooLarge.

    A declared Content-Length over the limit is answered at once, unread (the server discards the rest of
    the body as it arrives and keeps the connection). A body that grows past the limit while being read
    raises the 413 ``StatusError`` inside the read, so the route stops there.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await too_large(self.max_bytes).response()(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise too_large(self.max_bytes)
            return message

        return counted


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:  # the HTTP server refuses such requests before they get here
                return None
    return None


# -- writing ---------------------------------------------------------------------------------------


class SafeJSONResponse(JSONResponse):
    """A JSON answer that stays valid JSON even for values stored before strict reading existed."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except ValueError:  # NaN/Infinity (allow_nan=False) or a lone surrogate (UnicodeEncodeError)
            log.warning("an answer held values JSON cannot carry (NaN, lone surrogates); sent as null/U+FFFD")
            return super().render(_sanitized(content))


def _sanitized(value: Any) -> Any:
    # Recursive: this only ever sees stored documents, which were parsed (recursively) when written.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_sanitized(key): _sanitized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_sanitized(item) for item in value]
    return value
