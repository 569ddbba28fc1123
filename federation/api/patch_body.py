"""Reading a write request: its body by content type, and the PATCH options (field manager, force).

Invariants:
- POST and PUT bodies are strict JSON (`bodies.read_json`). A PATCH body is read by its Content-Type: the
  three JSON patch types as strict JSON, `application/apply-patch+yaml` as YAML (of which JSON is a
  subset, and JSON is what kubectl and the official clients send). Any other Content-Type on a PATCH is
  415 UnsupportedMediaType, as kube-apiserver answers, before the body is read.
- YAML gets the same limits as JSON: no aliases (a few lines of anchors expand to gigabytes), scalars
  that look like timestamps stay strings, and the document is then checked as strict JSON is (depth,
  NaN, NUL, lone surrogates), so nothing downstream sees a value JSON cannot carry.
- The field manager is the `fieldManager` query parameter, else the User-Agent's product (`kubectl`),
  as kube-apiserver derives it. Apply requires an explicit one (400), and every manager is at most 128
  characters (422).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from fastapi import Request
from starlette.concurrency import run_in_threadpool

from federation.api.bodies import parse_json, parse_json_body, read_json
from federation.api.status import StatusError, bad_request
from federation.model.patching import APPLY, PATCH_TYPES

MAX_MANAGER_LENGTH = 128
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """How a write is made: the PATCH content type ("" for POST/PUT), who makes it, and ``force``."""

    content_type: str
    manager: str
    force: bool = False


def unsupported_media_type(content_type: str, accepted: tuple[str, ...] = PATCH_TYPES) -> StatusError:
    message = (
        f"the body of the request was in an unknown format ({content_type or 'no Content-Type'}) - "
        f"accepted media types include: {', '.join(accepted)}"
    )
    return StatusError(415, "UnsupportedMediaType", message)


def content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def write_options(request: Request) -> WriteOptions:
    """The options of a POST, PUT or PATCH (400/422 for a bad ``fieldManager`` or ``force``)."""
    params = request.query_params
    kind = content_type(request) if request.method == "PATCH" else ""
    given = params.get("fieldManager")
    if kind == APPLY and not given:
        raise bad_request("PATCH requests with apply content type require fieldManager")
    manager = given or request.headers.get("user-agent", "").split("/")[0].strip() or "unknown"
    if len(manager) > MAX_MANAGER_LENGTH:
        message = f"fieldManager: Invalid value: must be at most {MAX_MANAGER_LENGTH} characters"
        raise StatusError(422, "Invalid", message, causes=[{"field": "fieldManager", "message": message}])
    force = params.get("force", "false").lower()
    if force not in ("true", "false"):
        raise bad_request(f"force: Invalid value: {force!r}: must be true or false")
    if force == "true" and request.method == "PATCH" and kind != APPLY:
        raise bad_request("force: Invalid value: true: may not be specified for non-apply patch")
    return WriteOptions(kind, manager, force == "true")


def field_manager(request: Request) -> str | None:
    """Who makes a write (recorded in managedFields); None for reads and deletes."""
    return write_options(request).manager if request.method in WRITE_METHODS else None


async def read_body(request: Request) -> Any:
    """The body of a write (None for reads and deletes)."""
    if request.method in ("POST", "PUT"):
        return await read_json(request)
    if request.method != "PATCH":
        return None
    kind = content_type(request)
    if kind not in PATCH_TYPES:
        raise unsupported_media_type(kind)
    raw = await request.body()
    if kind == APPLY:
        return await run_in_threadpool(parse_apply, raw)  # YAML: slow enough for the pool at any size
    return await parse_json_body(raw)


class _ApplyLoader(yaml.SafeLoader):
    """YAML 1.1 as sigs.k8s.io/yaml reads it, minus aliases, with timestamps left as strings."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases are not accepted in an apply configuration")
        return super().compose_node(parent, index)


_ApplyLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_apply(raw: bytes) -> Any:
    """An apply configuration: strict JSON when it is JSON, else one YAML document checked as JSON."""
    if raw.lstrip()[:1] in (b"{", b"["):
        return parse_json(raw)
    try:
        document = yaml.load(raw.decode("utf-8"), Loader=_ApplyLoader)  # a SafeLoader: no object tags
        as_json = json.dumps(document, allow_nan=True)
    except UnicodeDecodeError as exc:
        raise bad_request(f"the request body is not valid UTF-8: {exc.reason} at byte {exc.start}") from exc
    except (yaml.YAMLError, TypeError, ValueError, RecursionError) as exc:
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise bad_request(f"the request body is not a valid apply configuration: {problem}") from exc
    return parse_json(as_json.encode("utf-8"))
