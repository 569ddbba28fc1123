"""A skeletal OpenAPI v3 surface, just enough for ``kubectl apply`` to validate on the server side.

kubectl 1.32 validates manifests either itself (needs full schemas from ``/openapi/v2``) or by sending
``fieldValidation=Strict`` when the OpenAPI v3 document of the group/version shows a PATCH operation for the
kind that accepts that query parameter. We serve exactly that: per group/version, one PATCH operation per
resource, tagged with ``x-kubernetes-group-version-kind`` and declaring ``fieldValidation``. No schemas, so
kubectl builds patches from its compiled-in types (built-ins) or uses JSON merge patch (everything else).

Invariant: the index lists every served group/version; each document URL carries a content hash so
kubectl's cache never serves a stale document after a new kind appears.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from federation.sim.kinds import Registry, ResourceType


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _served(registry: Registry) -> list[tuple[str, str]]:
    pairs = [("", "v1")]
    for group, versions in sorted(registry.groups().items()):
        pairs += [(group, v) for v in versions]
    return pairs


def _patch_operation(rtype: ResourceType, version: str) -> dict[str, Any]:
    return {
        "patch": {
            "operationId": f"patch{rtype.kind}",
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": rtype.group, "version": version, "kind": rtype.kind},
            "parameters": [
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
            ],
            "responses": {"200": {"description": "OK"}},
        }
    }


def group_version_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rtype in types:
        scope = "namespaces/{namespace}/" if rtype.namespaced else ""
        paths[f"/{_gv_path(group, version)}/{scope}{rtype.plural}/{{name}}"] = _patch_operation(
            rtype, version
        )
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "simulated"}, "paths": paths}


def index(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: group/version path → document URL (with a content hash)."""
    paths: dict[str, Any] = {}
    for group, version in _served(registry):
        doc = group_version_document(registry, group, version)
        if doc is None:
            continue
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
        gv_path = _gv_path(group, version)
        paths[gv_path] = {"serverRelativeURL": f"/openapi/v3/{gv_path}?hash={digest}"}
    return {"paths": paths}
