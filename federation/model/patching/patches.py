"""Patch application: JSON merge patch, strategic merge patch, JSON patch, and the apply (SSA) merge.

Invariants:
- Every function returns a new document; inputs are never mutated.
- JSON merge patch follows RFC 7386 (``null`` deletes, maps merge, everything else replaces).
- Strategic merge patch is merge patch plus, for built-in kinds, lists merged by their merge key
  (``containers`` by ``name`` ...), ``$patch: delete|replace`` and the ``$setElementOrder``/``$retainKeys``/
  ``$deleteFromPrimitiveList`` directives that kubectl's client-side apply sends.
- JSON patch follows RFC 6902; a malformed operation raises ``PatchError`` (BadRequest), a path that does
  not exist or a failed ``test`` raises ``PatchError`` with reason Invalid (kube-apiserver's 422).
- Pure: no I/O; the server that serves the patch turns ``PatchError`` into its own Status.
"""

from __future__ import annotations

import copy
from typing import Any

from federation.model.patching.fields import merge_key


class PatchError(ValueError):
    """A patch that cannot be applied; ``reason`` is Kubernetes' (BadRequest or Invalid)."""

    def __init__(self, message: str, reason: str = "BadRequest") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason

    @property
    def code(self) -> int:
        return 422 if self.reason == "Invalid" else 400


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target: Any, patch: Any, keyed: bool) -> Any:
    """Strategic merge patch as far as kubectl and the Python client use it."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            remaining = _without(out.get(field), value, key)
            if field in out:
                out[field] = remaining
        elif key.startswith("$"):
            continue  # $setElementOrder changes no content; $retainKeys is applied below
        elif value is None or _is_delete(value):
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _merge_list(key, out.get(key), value, keyed)
        else:
            out[key] = strategic_merge_patch(out.get(key), value, keyed)
    return _retained(out, patch.get("$retainKeys"))


def _without(current: Any, doomed: Any, directive: str) -> list[Any]:
    if not isinstance(doomed, list):
        raise PatchError(f"{directive} must be a list of the values to delete")
    return [v for v in current if v not in doomed] if isinstance(current, list) else []


def _retained(out: dict[str, Any], keys: Any) -> dict[str, Any]:
    """``$retainKeys`` (a union field's patch strategy): every key it does not list is cleared."""
    if keys is None:
        return out
    if not isinstance(keys, list):
        raise PatchError("$retainKeys must be a list of field names")
    return {k: v for k, v in out.items() if k in keys}


def _merge_list(field: str, current: Any, patch: list[Any], keyed: bool) -> list[Any]:
    key = merge_key(field, [i for i in patch if not _is_delete(i)] or patch) if keyed else None
    if key is None or not isinstance(current, list) or merge_key(field, current) != key:
        return [copy.deepcopy(i) for i in patch if not _is_delete(i)]
    out = copy.deepcopy(current)
    for item in patch:
        index = next((n for n, c in enumerate(out) if c.get(key) == item.get(key)), None)
        if _is_delete(item):
            if index is not None:
                out.pop(index)
        elif index is None:
            out.append(strategic_merge_patch({}, item, keyed))
        else:
            out[index] = strategic_merge_patch(out[index], item, keyed)
    return out


def _is_delete(item: Any) -> bool:
    return isinstance(item, dict) and item.get("$patch") == "delete"


def apply_merge(live: Any, config: Any, keyed: bool) -> Any:
    """Merge an apply configuration into the live object: maps recurse, keyed lists merge, rest replaces."""
    if not isinstance(config, dict) or not isinstance(live, dict):
        return copy.deepcopy(config)
    out = copy.deepcopy(live)
    for key, value in config.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list) and keyed and merge_key(key, value) is not None:
            out[key] = _apply_list(key, out.get(key), value)
        else:
            out[key] = apply_merge(out.get(key), value, keyed)
    return out


def _apply_list(field: str, current: Any, config: list[Any]) -> list[Any]:
    key = merge_key(field, config)
    if key is None or not isinstance(current, list) or merge_key(field, current) != key:
        return copy.deepcopy(config)
    by_key = {c.get(key): c for c in current}
    merged = [apply_merge(by_key.get(item[key], {}), item, True) for item in config]
    wanted = {item[key] for item in config}
    # Elements the applier does not mention stay (another manager may own them); ownership pruning
    # removes the ones this manager dropped.
    return merged + [copy.deepcopy(c) for c in current if c.get(key) not in wanted]


# --- RFC 6902 JSON patch -------------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if path == "":
        return []
    if not isinstance(path, str) or not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}: it must be empty or start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _missing(parts: list[str]) -> PatchError:
    return PatchError(
        "the server rejected our request due to an error in our request: "
        f"path /{'/'.join(parts)} does not exist",
        "Invalid",
    )


def _resolve(doc: Any, parts: list[str]) -> Any:
    current = doc
    for part in parts:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise _missing(parts)
    return current


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list) and (last == "-" or (last.isdigit() and int(last) <= len(parent))):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        raise _missing(parts)
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise PatchError("a JSON patch cannot remove the whole document")
    parent = _resolve(doc, parts[:-1])
    _resolve(doc, parts)  # Invalid when missing
    if isinstance(parent, list):
        parent.pop(int(parts[-1]))
    else:
        del parent[parts[-1]]
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 operation list."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict):
            raise PatchError(f"a JSON patch operation must be an object, got {op!r}")
        doc = _json_patch_op(doc, op)
    return doc


def _value(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise PatchError(f"the JSON patch operation {op.get('op')!r} at {op.get('path')!r} has no value")
    return copy.deepcopy(op["value"])


def _json_patch_op(doc: Any, op: dict[str, Any]) -> Any:
    kind, parts = op.get("op"), _pointer(op.get("path"))
    if kind == "add":
        return _add(doc, parts, _value(op))
    if kind == "remove":
        return _remove(doc, parts)
    if kind == "replace":
        value = _value(op)
        _resolve(doc, parts)
        return _add(_remove(doc, parts), parts, value) if parts else value
    if kind in ("move", "copy"):
        source = _pointer(op.get("from"))
        value = copy.deepcopy(_resolve(doc, source))
        if kind == "move":
            doc = _remove(doc, source)
        return _add(doc, parts, value)
    if kind == "test":
        if _resolve(doc, parts) != _value(op):
            raise PatchError(f"the server rejected our request: test failed at {op.get('path')}", "Invalid")
        return doc
    raise PatchError(f"unknown JSON patch operation {kind!r}")
