"""Field sets: which fields an object sets, rendered as and parsed from ``managedFields[].fieldsV1``.

A path is a tuple of fieldsV1 elements: ``("f:spec", "f:replicas")`` or, inside a keyed list,
``("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}', "f:image")``. A path that ends in a
``k:`` element stands for the list element itself (rendered ``"."`` in fieldsV1).

Invariants:
- Only lists that Kubernetes merges by key (``containers`` by ``name``, ``ports`` by
  ``containerPort``/``port``, ...) produce ``k:`` elements, and only for built-in kinds; every other
  list is atomic (one leaf).
- Server-owned fields (``apiVersion``, ``kind``, identity and bookkeeping metadata, ``status``) are never in a
  field set, so no manager owns them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

Path = tuple[str, ...]

# Kubernetes list-map keys (x-kubernetes-list-map-keys / patchMergeKey) for the built-in types we serve.
_MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "conditions": ("type",),
    "hostAliases": ("ip",),
    # Container ports merge by containerPort, Service ports by port.
    "ports": ("containerPort", "port"),
}
_SERVER_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)


def merge_key(field: str, items: list[Any]) -> str | None:
    """The key that list ``field`` merges by, when every item is a map that carries it; else None."""
    for key in _MERGE_KEYS.get(field, ()):
        if items and all(isinstance(i, dict) and key in i for i in items):
            return key
    return None


def element(key: str, item: dict[str, Any]) -> str:
    return "k:" + json.dumps({key: item[key]}, separators=(",", ":"))


def owned_content(obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an object that managers can own: everything but type, identity, bookkeeping and status."""
    content = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status", "metadata")}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_METADATA}
    if meta:
        content["metadata"] = meta
    return content


def field_paths(obj: dict[str, Any], keyed: bool) -> set[Path]:
    """Every leaf path (and keyed list element) that ``obj`` sets."""
    out: set[Path] = set()
    _walk(owned_content(obj), (), keyed, out)
    return out


def _walk(value: Any, prefix: Path, keyed: bool, out: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for name, child in value.items():
            _walk_field(name, child, prefix, keyed, out)
    elif prefix:
        out.add(prefix)


def _walk_field(name: str, child: Any, prefix: Path, keyed: bool, out: set[Path]) -> None:
    path = (*prefix, f"f:{name}")
    key = merge_key(name, child) if keyed and isinstance(child, list) else None
    if key is None:
        _walk(child, path, keyed, out)
        return
    for item in child:
        item_path = (*path, element(key, item))
        out.add(item_path)
        _walk(item, item_path, keyed, out)


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """Render a path set as the nested fieldsV1 map (``{"f:spec": {"f:replicas": {}}}``)."""
    root: dict[str, Any] = {}
    leaves: list[dict[str, Any]] = []
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
        leaves.append(node)
    for node in leaves:
        if node:  # a keyed element that also has owned children
            node["."] = {}
    return root


def from_fields_v1(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    """Parse a fieldsV1 map back into a path set."""
    out: set[Path] = set()
    if not tree and prefix:
        out.add(prefix)
    for part, child in tree.items():
        if part == ".":
            out.add(prefix)
        else:
            # A stored entry is read, never trusted: anything but a map below a field is a leaf.
            out |= from_fields_v1(child if isinstance(child, dict) else {}, (*prefix, part))
    return out


def _child(value: Any, part: str) -> tuple[bool, Any]:
    if part.startswith("f:") and isinstance(value, dict):
        name = part[2:]
        return (name in value, value.get(name))
    if part.startswith("k:") and isinstance(value, list):
        try:
            want = json.loads(part[2:])
        except ValueError:
            return False, None
        if not isinstance(want, dict):
            return False, None
        for item in value:
            if isinstance(item, dict) and all(item.get(k) == v for k, v in want.items()):
                return True, item
    return False, None


def value_at(obj: dict[str, Any], path: Path) -> tuple[bool, Any]:
    """(present, value) at ``path`` in ``obj`` (the metadata part is looked up like any other field)."""
    current: Any = obj
    for part in path:
        present, current = _child(current, part)
        if not present:
            return False, None
    return True, current


def remove_path(obj: dict[str, Any], path: Path) -> None:
    """Delete the field or keyed element at ``path``; missing paths are ignored."""
    present, parent = value_at(obj, path[:-1])
    if not present:
        return
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        found, item = _child(parent, last)
        if found:
            parent.remove(item)


def describe(path: Path) -> str:
    """``(".spec", ".replicas")`` style, as the API server names a conflicting field."""
    out = ""
    for part in path:
        out += "." + part[2:] if part.startswith("f:") else f"[{part[2:]}]"
    return out
