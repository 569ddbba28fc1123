"""Translation between Kubernetes-shaped dicts and the shared columns of an object row.

Invariants:
- ``join(row)`` returns a fresh deep copy: callers may mutate it without touching ORM state (JSON
  columns are not mutation-tracked, so in-place edits would silently never be written). ``view(row)`` is
  the same manifest without the copy, for readers that never mutate it.
- Server-owned metadata (uid, resourceVersion, generation, creationTimestamp) is never taken from the
  caller's manifest; ``split`` drops it.
- ``metadata.resourceVersion`` is rendered as a string, as in Kubernetes; it is the row's
  ``resource_version``: the global revision of its last write (``changelog``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from federation.model.jsonvalue import clone as _clone
from federation.store.tables.base import ObjectMixin

_TOP_LEVEL = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_SERVER_METADATA = frozenset({"uid", "resourceVersion", "generation", "creationTimestamp"})
_COLUMN_METADATA = frozenset({"name", "namespace", "labels", "annotations"}) | _SERVER_METADATA


@dataclass(frozen=True, slots=True)
class Parts:
    """A manifest split into the values of the shared columns."""

    api_version: str
    kind: str
    namespace: str
    name: str
    labels: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, Any] = field(default_factory=dict)
    metadata_extra: dict[str, Any] = field(default_factory=dict)
    spec: Any = None
    status: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    resource_version: str | None = None


def split(obj: Mapping[str, Any], *, copy: bool = True) -> Parts:
    """The column values of ``obj`` (deep-copied, so later changes to ``obj`` do not leak in; with
    ``copy=False`` they share its JSON values, for a caller that owns ``obj`` and never edits either)."""
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    rv = meta.get("resourceVersion")
    clone = _clone if copy else _shared
    return Parts(
        api_version=str(obj.get("apiVersion") or ""),
        kind=str(obj.get("kind") or ""),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        metadata_extra=clone({k: v for k, v in meta.items() if k not in _COLUMN_METADATA}),
        spec=clone(obj.get("spec")),
        status=clone(obj.get("status")),
        extra=clone({k: v for k, v in obj.items() if k not in _TOP_LEVEL}),
        resource_version=None if rv in (None, "") else str(rv),
    )


def new_row_values(parts: Parts, kind: str, api_version: str, now: datetime) -> dict[str, Any]:
    """The columns every new object's row starts with (``ObjectRepository.create``'s): a new uid, generation
    1, the body's parts, both stamps ``now``; ``resource_version`` 0 until ``changelog.record`` draws it.
    For the batch writers that insert column values (``work_writes``, ``binding_writes``)."""
    return {
        "uid": str(uuid.uuid4()),
        "api_version": parts.api_version or api_version,
        "kind": kind,
        "namespace": parts.namespace,
        "name": parts.name,
        "resource_version": 0,
        "generation": 1,
        "labels": parts.labels,
        "annotations": parts.annotations,
        "metadata_extra": parts.metadata_extra,
        "spec": parts.spec,
        "status": parts.status,
        "extra": parts.extra,
        "created_at": now,
        "updated_at": now,
    }


def generation_content(spec: Any, extra: Mapping[str, Any]) -> Any:
    """What ``metadata.generation`` tracks: ``spec``, or for kinds without one, the body beyond metadata."""
    return ("spec", spec) if spec is not None else ("body", dict(extra))


@functools.lru_cache(maxsize=4096)
def format_timestamp(value: datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes renders ``metav1.Time``. Cached: a batch
    renders thousands of rows written at the same instant."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def join(row: ObjectMixin) -> dict[str, Any]:
    """The manifest a row stores, with server-owned metadata filled in."""
    return _manifest(row, deep=_clone, flat=dict, with_status=True)


def view(row: ObjectMixin, *, with_status: bool = True) -> dict[str, Any]:
    """``join`` without the copy: the manifest shares the row's JSON values, so it is for a reader that
    never mutates it (one that copies what it keeps, as rendering does). ``with_status=False`` leaves the
    status out, so a reader that never looks at it can leave the column unloaded (``defer``)."""
    return _manifest(row, deep=_shared, flat=_shared, with_status=with_status)


def _manifest(
    row: ObjectMixin, *, deep: Callable[[Any], Any], flat: Callable[[Any], Any], with_status: bool
) -> dict[str, Any]:
    metadata = _metadata(row, deep, flat)
    obj: dict[str, Any] = {"apiVersion": row.api_version, "kind": row.kind, "metadata": metadata}
    if row.spec is not None:
        obj["spec"] = deep(row.spec)
    obj.update(deep(row.extra or {}))
    if with_status and row.status is not None:
        obj["status"] = deep(row.status)
    return obj


def _metadata(row: ObjectMixin, deep: Callable[[Any], Any], flat: Callable[[Any], Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": row.name}
    if row.namespace:
        meta["namespace"] = row.namespace
    meta["uid"] = row.uid
    meta["resourceVersion"] = str(row.resource_version)
    meta["generation"] = row.generation
    meta["creationTimestamp"] = format_timestamp(row.created_at)
    if row.labels:
        meta["labels"] = flat(row.labels)
    if row.annotations:
        meta["annotations"] = flat(row.annotations)
    meta.update(deep(row.metadata_extra or {}))
    return meta


def _shared(value: Any) -> Any:
    return value


def condition_status(status: Any, condition_type: str) -> bool | None:
    """``True``/``False`` for a ``status.conditions`` entry of that type; ``None`` if absent or Unknown."""
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions or []:
        if isinstance(condition, Mapping) and condition.get("type") == condition_type:
            return {"True": True, "False": False}.get(str(condition.get("status")))
    return None
