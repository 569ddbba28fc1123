"""``metadata.managedFields`` bookkeeping and server-side apply, minimal but correct.

Invariants:
- There is at most one entry per (manager, operation); operation is ``Apply`` or ``Update``.
- An Update takes ownership of every field it changed, silently, from every other manager.
- An Apply owns exactly the fields of its configuration. Fields it owned before and no longer lists are
  removed from the object unless another manager also owns them. A field owned by another manager whose
  value the configuration changes is a 409 conflict unless ``force``, which transfers ownership.
- A field that no longer exists in the object is owned by no one; empty entries are dropped.
- An apply that changes neither the object nor who owns what leaves ``managedFields`` exactly as they were
  (times included), so applying the same configuration twice writes nothing.
- Pure: a conflict is raised as ``ApplyConflict``; the server that serves the apply renders it as its 409.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from federation.model.patching.fields import (
    Path,
    describe,
    field_paths,
    from_fields_v1,
    remove_path,
    to_fields_v1,
    value_at,
)
from federation.model.patching.patches import apply_merge


@dataclass(frozen=True, slots=True)
class FieldConflict:
    """A field the applier would change that another manager owns."""

    manager: str
    api_version: str
    field: str  # ".spec.replicas" style, as kube-apiserver names it


class ApplyConflict(Exception):
    """An apply that would change fields other managers own, without ``force`` (kube-apiserver: 409)."""

    def __init__(self, conflicts: list[FieldConflict]) -> None:
        self.conflicts = tuple(conflicts)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        count = len(self.conflicts)
        if count == 1:
            c = self.conflicts[0]
            return (
                f'Apply failed with 1 conflict: conflict with "{c.manager}" using {c.api_version}: {c.field}'
            )
        lines = "".join(
            f'\n- conflict with "{c.manager}" using {c.api_version}: {c.field}' for c in self.conflicts
        )
        return f"Apply failed with {count} conflicts:{lines}"

    def causes(self) -> list[dict[str, str]]:
        """``details.causes`` of the Status, one per conflicting field (what kubectl prints)."""
        return [
            {
                "reason": "FieldManagerConflict",
                "message": f'conflict with "{c.manager}" using {c.api_version}',
                "field": c.field,
            }
            for c in self.conflicts
        ]


@dataclass(slots=True)
class Entry:
    manager: str
    operation: str
    api_version: str
    time: str
    paths: set[Path]

    def render(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.paths),
        }


def _parse(obj: dict[str, Any] | None) -> list[Entry]:
    raw = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    return [
        Entry(
            e.get("manager", ""),
            e.get("operation", "Update"),
            e.get("apiVersion", ""),
            e.get("time", ""),
            from_fields_v1(e.get("fieldsV1") or {}),
        )
        for e in raw
        if isinstance(e, dict) and isinstance(e.get("fieldsV1") or {}, dict)
    ]


def _render(entries: list[Entry]) -> list[dict[str, Any]]:
    return [e.render() for e in entries if e.paths]


def _entry(entries: list[Entry], manager: str, operation: str, api_version: str, now: str) -> Entry:
    for entry in entries:
        if entry.manager == manager and entry.operation == operation:
            return entry
    entry = Entry(manager, operation, api_version, now, set())
    entries.append(entry)
    return entry


def record_update(
    old: dict[str, Any] | None, new: dict[str, Any], manager: str, keyed: bool, now: str
) -> list[dict[str, Any]]:
    """managedFields for ``new`` after a create/replace/patch by ``manager`` (operation Update)."""
    entries = _parse(old)
    present = field_paths(new, keyed)
    changed = {p for p in present if old is None or value_at(old, p) != value_at(new, p)}
    for entry in entries:
        entry.paths = (entry.paths & present) - changed
    if changed:
        mine = _entry(entries, manager, "Update", new.get("apiVersion", ""), now)
        mine.paths |= changed
        mine.time = now
        mine.api_version = new.get("apiVersion", "")
    return _render(entries)


def server_side_apply(
    live: dict[str, Any] | None, config: dict[str, Any], manager: str, force: bool, keyed: bool, now: str
) -> dict[str, Any]:
    """The object after applying ``config`` as ``manager``, managedFields included; ``ApplyConflict``
    when it would change another manager's fields and ``force`` is not set."""
    entries = _parse(live)
    base = copy.deepcopy(live) if live is not None else {}
    wanted = field_paths(config, keyed)
    _check_conflicts(entries, base, config, wanted, manager, force)
    mine = _entry(entries, manager, "Apply", config.get("apiVersion", ""), now)
    before = (set(mine.paths), mine.api_version)
    others = set().union(*(e.paths for e in entries if e is not mine))
    merged = apply_merge(base, _strip_server_fields(config), keyed)
    # Longest paths first so a dropped child goes before its dropped parent.
    for path in sorted(mine.paths - wanted - others, key=len, reverse=True):
        remove_path(merged, path)
    mine.paths = wanted
    mine.api_version = config.get("apiVersion", "")
    present = field_paths(merged, keyed)
    for entry in entries:
        entry.paths &= present
    if live is None or (mine.paths, mine.api_version) != before or _content(merged) != _content(live):
        mine.time = now
    merged.setdefault("metadata", {})["managedFields"] = _render(entries)
    return merged


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """The object apart from its managedFields."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _strip_server_fields(config: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(config)
    meta = out.get("metadata") or {}
    for key in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"):
        meta.pop(key, None)
    return out


def _check_conflicts(
    entries: list[Entry],
    live: dict[str, Any],
    config: dict[str, Any],
    wanted: set[Path],
    manager: str,
    force: bool,
) -> None:
    conflicts: list[tuple[Entry, Path]] = []
    for entry in entries:
        if entry.manager == manager and entry.operation == "Apply":
            continue
        for path in sorted(entry.paths & wanted):
            if value_at(live, path) != value_at(config, path):
                conflicts.append((entry, path))
    if not conflicts:
        return
    if force:
        for entry, path in conflicts:
            entry.paths.discard(path)
        return
    raise ApplyConflict([FieldConflict(e.manager, e.api_version, describe(p)) for e, p in conflicts])
