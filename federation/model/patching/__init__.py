"""Kubernetes PATCH semantics on plain documents, shared by the federation API and the member simulator.

The four patch types of kube-apiserver, by content type: JSON merge patch (RFC 7386), JSON patch
(RFC 6902), strategic merge patch (merge patch with lists merged by key, built-in kinds only) and
server-side apply (an apply configuration merged by field ownership, ``metadata.managedFields``).

Invariants:
- Pure: documents in, documents out; no I/O, no clock (callers pass ``now``), inputs never mutated.
- A patch that cannot apply raises ``PatchError`` (``reason`` BadRequest or Invalid); an apply that would
  change another manager's fields without ``force`` raises ``ApplyConflict``. Callers render both as their
  own Status errors.
- ``keyed`` says whether lists merge by their Kubernetes merge key (built-in kinds) or are atomic (custom
  resources), for strategic merge and for apply alike.
"""

from __future__ import annotations

from typing import Any

from federation.model.patching.managed import (
    ApplyConflict,
    FieldConflict,
    record_update,
    server_side_apply,
)
from federation.model.patching.patches import (
    PatchError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES: tuple[str, ...] = (JSON_PATCH, MERGE, STRATEGIC, APPLY)

# Groups whose kinds kube-apiserver serves natively: their lists merge by key and they accept strategic
# merge patches. Every other group is a custom resource (atomic lists, 415 for strategic merge).
BUILTIN_GROUPS: frozenset[str] = frozenset(
    {
        "",
        "apps",
        "batch",
        "autoscaling",
        "policy",
        "networking.k8s.io",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "apiextensions.k8s.io",
        "events.k8s.io",
    }
)


def patched(target: Any, content_type: str, patch: Any, keyed: bool) -> Any:
    """``target`` after a merge, JSON or strategic merge patch (apply goes through ``server_side_apply``).

    Raises ``ValueError`` for any other content type (the caller has already answered 415 for those).
    """
    if content_type == MERGE:
        return merge_patch(target, patch)
    if content_type == STRATEGIC:
        return strategic_merge_patch(target, patch, keyed)
    if content_type == JSON_PATCH:
        return json_patch(target, patch)
    raise ValueError(f"not a patch content type: {content_type!r}")


__all__ = [
    "APPLY",
    "BUILTIN_GROUPS",
    "JSON_PATCH",
    "MERGE",
    "PATCH_TYPES",
    "STRATEGIC",
    "ApplyConflict",
    "FieldConflict",
    "PatchError",
    "json_patch",
    "merge_patch",
    "patched",
    "record_update",
    "server_side_apply",
    "strategic_merge_patch",
]
