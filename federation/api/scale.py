"""The `scale` subresource (autoscaling/v1 `Scale`) of Deployments, StatefulSets and ReplicaSets, as
kube-apiserver serves it, so `kubectl scale` and autoscalers work against the federation.

Invariants:
- GET answers the workload's Scale: `spec.replicas` from the template, `status.replicas` and the
  selector (as a label selector string) from its status and spec.
- PUT takes a Scale, PATCH takes a merge, JSON or strategic patch of the Scale; either changes only the
  template's `spec.replicas`, written as a PUT of the template would be (validation, resourceVersion
  precondition, managedFields, notify): a Scale's `metadata.resourceVersion` is the template's.
- `spec.replicas` must be an integer from 0 to 2^31-1 (422 Invalid naming `spec.replicas`).
- Any other kind has no `scale` (404), as its discovery entry says.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from pydantic import ValidationError

from federation.api import objects
from federation.api.objects import Body
from federation.api.patch_body import WriteOptions, unsupported_media_type
from federation.api.status import StatusError, bad_request, invalid, method_not_allowed, not_found
from federation.model import patching
from federation.model.base import INT32_MAX
from federation.model.kinds import has_scale
from federation.model.labels import LabelSelector

SCALE_API_VERSION = "autoscaling/v1"
_SCALE_PATCH_TYPES = (patching.JSON_PATCH, patching.MERGE, patching.STRATEGIC)


def serve(session: Any, req: objects.Request, method: str, options: WriteOptions) -> tuple[Body, int]:
    name = req.path.name or ""
    if not has_scale(req.info) or not name:
        raise not_found(f"{req.info.resource}/scale", name)
    template = objects.Request(dataclasses.replace(req.path, subresource=None), req.info)
    current = objects.read(session, template)
    live = objects.existing(template, current)
    if method == "GET":
        return scale_of(live), 200
    if method == "PUT":
        desired = req.body
    elif method == "PATCH":
        if options.content_type not in _SCALE_PATCH_TYPES:
            raise unsupported_media_type(options.content_type, _SCALE_PATCH_TYPES)
        desired = _patched(scale_of(live), options.content_type, req.body)
    else:
        raise method_not_allowed(f"{method} is not supported on the scale subresource")
    updated = _with_replicas(live, _replicas(desired, name), _resource_version(desired))
    result, _ = objects.replace_object(
        session, dataclasses.replace(template, body=updated, manager=options.manager), current
    )
    return scale_of(result), 200


def scale_of(obj: Body) -> Body:
    """The autoscaling/v1 Scale of a workload."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    scale_meta = {
        k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
    }
    replicas = status.get("replicas", 0) if isinstance(status, dict) else 0
    return {
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": scale_meta,
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {"replicas": replicas, "selector": _selector(spec.get("selector"))},
    }


def _selector(raw: Any) -> str:
    try:
        return str(LabelSelector.model_validate(raw or {}).to_selector())
    except (ValidationError, ValueError):
        return ""  # an unparsable selector selects nothing a client could name


def _patched(scale: Body, content_type: str, document: Any) -> Any:
    try:
        return patching.patched(scale, content_type, document, keyed=True)
    except patching.PatchError as exc:
        raise StatusError(exc.code, exc.reason, exc.message) from exc


def _replicas(desired: Any, name: str) -> int:
    if not isinstance(desired, dict):
        raise bad_request("the body must be an autoscaling/v1 Scale object")
    if desired.get("kind") not in (None, "", "Scale"):
        raise bad_request(f"the body is a {desired.get('kind')}, not a Scale")
    replicas = (desired.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 0 <= replicas <= INT32_MAX:
        message = f"Invalid value: {replicas!r}: must be an integer from 0 to {INT32_MAX}"
        raise invalid(
            "Scale", name, [{"field": "spec.replicas", "message": message, "reason": "FieldValueInvalid"}]
        )
    return replicas


def _resource_version(desired: Any) -> Any:
    meta = desired.get("metadata") if isinstance(desired, dict) else None
    return meta.get("resourceVersion") if isinstance(meta, dict) else None


def _with_replicas(live: Body, replicas: int, resource_version: Any) -> Body:
    """The template with ``replicas``; the Scale's resourceVersion (if any) is the precondition."""
    updated = copy.deepcopy(live)
    updated.setdefault("spec", {})["replicas"] = replicas
    updated.pop("status", None)
    if resource_version in (None, ""):
        updated["metadata"].pop("resourceVersion", None)
    else:
        updated["metadata"]["resourceVersion"] = resource_version
    return updated
