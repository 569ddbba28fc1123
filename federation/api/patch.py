"""PATCH on object paths, as kube-apiserver serves it: JSON patch, merge patch, strategic merge patch and
server-side apply, on an object and on its `status`; `/scale` is `scale`'s.

Invariants:
- A patched object is written exactly as a PUT of the result would be: the same validation and admission
  (`objects.replace_object`), the same resourceVersion precondition (a resourceVersion the patch leaves in
  the object, or puts there, must be current: 409 otherwise), the same notify (the caller's).
- Strategic merge patch is served for Kubernetes' built-in kinds only. Karmada's and Kosmos' kinds (custom
  resources in Karmada) and kinds an applied CRD defines answer 415 UnsupportedMediaType, as
  kube-apiserver answers for custom resources; their lists are atomic under apply too.
- A merge, JSON or strategic patch of a missing object is 404. Server-side apply creates it (201).
- Apply records ownership in `metadata.managedFields`; a change to a field another manager owns is 409
  Conflict naming the manager and the field unless `force=true`, which takes it over. Applying the same
  configuration again writes nothing: same resourceVersion, same managedFields.
- `status` takes the three patch types and writes status only; apply there is 415 (kube-apiserver's
  status apply tracks ownership we do not keep for status).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from federation.api import objects, scale
from federation.api.objects import Body
from federation.api.patch_body import WriteOptions, unsupported_media_type
from federation.api.status import StatusError, bad_request, conflict, method_not_allowed
from federation.model import kinds, patching
from federation.model.kinds import KindInfo
from federation.store.manifest import format_timestamp

_CUSTOM_RESOURCE_TYPES = (patching.JSON_PATCH, patching.MERGE, patching.APPLY)
_STATUS_TYPES = (patching.JSON_PATCH, patching.MERGE, patching.STRATEGIC)


def serve(session: Any, req: objects.Request, method: str, options: WriteOptions) -> tuple[Body, int]:
    """PATCH on an object or its status, or any verb on its scale: (answer, HTTP status)."""
    if req.path.subresource == "scale":
        return scale.serve(session, req, method, options)
    if method != "PATCH":
        raise method_not_allowed(f"{method} is not supported here")
    if req.path.name is None:
        raise method_not_allowed("PATCH needs an object name in the path")
    if req.path.subresource == "status":
        return patch_status(session, req, options), 200
    if options.content_type == patching.APPLY:
        return apply(session, req, options)
    return patch_object(session, req, options), 200


def builtin(info: KindInfo) -> bool:
    """Kubernetes' own kinds: strategic merge patch, lists merged by key."""
    return kinds.is_builtin_kind(info)


def check_patch_type(
    info: KindInfo, content_type: str, accepted: tuple[str, ...] = patching.PATCH_TYPES
) -> None:
    """415 for a patch type this kind does not take (strategic merge on a custom resource)."""
    if not builtin(info):
        accepted = tuple(t for t in accepted if t in _CUSTOM_RESOURCE_TYPES)
    if content_type not in accepted:
        raise unsupported_media_type(content_type, accepted)


def patched(live: Body, info: KindInfo, content_type: str, document: Any) -> Body:
    """``live`` after a merge, JSON or strategic patch; 400/422 for a patch that does not apply."""
    try:
        result = patching.patched(live, content_type, document, builtin(info))
    except patching.PatchError as exc:
        raise StatusError(exc.code, exc.reason, exc.message) from exc
    if not isinstance(result, dict):
        raise bad_request("the patched object is not a JSON object")
    return result


def patch_object(session: Any, req: objects.Request, options: WriteOptions) -> Body:
    check_patch_type(req.info, options.content_type)
    current = objects.read(session, req)
    new = patched(objects.existing(req, current), req.info, options.content_type, req.body)
    patched_req = dataclasses.replace(req, body=new, manager=options.manager)
    result, _ = objects.replace_object(session, patched_req, current)
    return result


def patch_status(session: Any, req: objects.Request, options: WriteOptions) -> Body:
    check_patch_type(req.info, options.content_type, _STATUS_TYPES)
    current = objects.read(session, req)
    new = patched(objects.existing(req, current), req.info, options.content_type, req.body)
    return objects.replace_status(session, dataclasses.replace(req, body=new), current)


def apply(session: Any, req: objects.Request, options: WriteOptions) -> tuple[Body, int]:
    """Server-side apply: (the object, 201 when it was created else 200)."""
    check_patch_type(req.info, options.content_type)
    name = req.path.name or ""
    if not isinstance(req.body, dict):
        raise bad_request("an apply configuration must be an object")
    config = objects.identified(req, req.body, for_name=name)
    expected = objects.resource_version(config["metadata"].get("resourceVersion"), "metadata.resourceVersion")
    repo = objects.repository(session, req.info)
    current = objects.read(session, req)
    live = None if current.row is None else objects.existing(req, current)
    if expected is not None and (live is None or live["metadata"]["resourceVersion"] != expected):
        raise conflict(req.info.resource, name)
    now = format_timestamp(repo.clock())
    try:
        merged = patching.server_side_apply(
            live, config, options.manager, options.force, builtin(req.info), now
        )
    except patching.ApplyConflict as exc:
        raise StatusError(409, "Conflict", exc.message, req.info.resource, name, exc.causes()) from exc
    if live is not None and merged == live:
        return live, 200  # nothing changed: nothing to write, the resourceVersion stays
    applied = dataclasses.replace(req, body=merged, manager=None)
    result, created = objects.replace_object(session, applied, current)
    return result, 201 if created else 200
