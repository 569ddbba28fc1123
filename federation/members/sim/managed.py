"""``metadata.managedFields`` bookkeeping and server-side apply, minimal but correct.

Invariants:
- There is at most one entry per (manager, operation); operation is ``Apply`` or ``Update``.
- An Update takes ownership of every field it changed, silently, from every other manager.
- An Apply owns exactly the fields of its configuration. Fields it owned before and no longer lists are
  removed from the object unless another manager also owns them. A field owned by another manager whose
  value the configuration changes is a 409 conflict unless ``force``, which transfers ownership.
- A field that no longer exists in the object is owned by no one; empty entries are dropped.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from federation.members.sim.errors import ApiError
from federation.members.sim.fields import (
    Path,
    describe,
    field_paths,
    from_fields_v1,
    remove_path,
    to_fields_v1,
    value_at,
)
from federation.members.sim.patching import apply_merge


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
        if isinstance(e, dict)
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
    """The object after applying ``config`` as ``manager``, managedFields included; 409 on conflicts."""
    entries = _parse(live)
    base = copy.deepcopy(live) if live is not None else {}
    wanted = field_paths(config, keyed)
    _check_conflicts(entries, base, config, wanted, manager, force)
    mine = _entry(entries, manager, "Apply", config.get("apiVersion", ""), now)
    others = set().union(*(e.paths for e in entries if e is not mine))
    merged = apply_merge(base, _strip_server_fields(config), keyed)
    # Longest paths first so a dropped child goes before its dropped parent.
    for path in sorted(mine.paths - wanted - others, key=len, reverse=True):
        remove_path(merged, path)
    mine.paths = wanted
    mine.time = now
    mine.api_version = config.get("apiVersion", "")
    present = field_paths(merged, keyed)
    for entry in entries:
        entry.paths &= present
    merged.setdefault("metadata", {})["managedFields"] = _render(entries)
    return merged


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
        for path in entry.paths & wanted:
            if value_at(live, path) != value_at(config, path):
                conflicts.append((entry, path))
    if not conflicts:
        return
    if force:
        for entry, path in conflicts:
            entry.paths.discard(path)
        return
    raise _conflict_error(conflicts)


def _conflict_error(conflicts: list[tuple[Entry, Path]]) -> ApiError:
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f'conflict with "{e.manager}" using {e.api_version}',
            "field": describe(p),
        }
        for e, p in conflicts
    ]
    lines = "\n".join(f"- {c['message']}: {c['field']}" for c in causes)
    plural = "conflict" if len(conflicts) == 1 else "conflicts"
    err = ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} {plural}: {lines}")
    err.details["causes"] = causes
    return err
