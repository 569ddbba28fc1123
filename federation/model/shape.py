"""pydantic's shape errors as Kubernetes field errors: the JSON path of the bad field and Kubernetes' wording.

Invariants:
- ``pydantic_errors`` reports every error pydantic finds, each at its JSON (alias) path with ``[i]`` indices
  and ``[key]`` map keys (``spec.placement.clusterTolerations[1].operator``,
  ``status.resourceSummary.allocatable[cpu]``), prefixed when asked.
- A missing field is ``Required value``; a Literal mismatch is ``Unsupported value`` listing the allowed
  values; a wrong JSON type is ``must be of type <integer|string|boolean|object|array>`` and a range error
  ``must be greater (less) than or equal to <bound>``, the CRD schema wording kube-apiserver uses. Any other
  pydantic message is kept, minus its ``Value error, `` prefix.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from federation.model.meta import FieldError, invalid, join_path, key_path, not_supported, required

# pydantic error type → the JSON type the field wanted.
_TYPE_ERRORS: dict[str, str] = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "string_type": "string",
    "bool_type": "boolean",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "list_type": "array",
    "tuple_type": "array",
}


def pydantic_errors(
    model: type[BaseModel], data: Mapping[str, Any], skip: tuple[str, ...] = (), prefix: str = ""
) -> list[FieldError]:
    """Validate ``data`` against ``model``; every pydantic error as a FieldError at its JSON path."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [_convert(model, e, prefix) for e in exc.errors() if not (e["loc"] and e["loc"][0] in skip)]
    return []


def _convert(model: type[BaseModel], error: Any, prefix: str) -> FieldError:
    path, leaf = loc_to_path(model, tuple(error["loc"]))
    path = join_path(prefix, path) if prefix and path else prefix or path
    kind = error["type"]
    value = error.get("input")
    if kind == "missing":
        return required(path)
    if kind in ("literal_error", "enum") and get_origin(leaf) is typing.Literal:
        return not_supported(path, value, [str(a) for a in get_args(leaf) if a != ""])
    return invalid(path, _shown(value), _message(kind, error))


def _message(kind: str, error: Any) -> str:
    context = error.get("ctx") or {}
    if kind in _TYPE_ERRORS:
        return f"must be of type {_TYPE_ERRORS[kind]}"
    if kind == "greater_than_equal":
        return f"must be greater than or equal to {context.get('ge')}"
    if kind == "less_than_equal":
        return f"must be less than or equal to {context.get('le')}"
    return str(error["msg"]).removeprefix("Value error, ")


def _shown(value: Any) -> Any:
    """Scalars as themselves; an object or array by its JSON type name (it may be large)."""
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return value


def loc_to_path(model: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[str, Any]:
    """Map a pydantic error location to a field path, walking the model's annotations for map vs field.

    Returns the path and the annotation found at its end (used to list a Literal's allowed values).
    """
    path = ""
    current: Any = model
    for segment in loc:
        current = _unwrap(current)
        if segment == "[key]":
            continue
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(segment, str):
            path, current = join_path(path, segment), _field_annotation(current, segment)
        elif get_origin(current) in (dict, Mapping) and not isinstance(segment, int):
            path, current = key_path(path, str(segment)), _args(current, 1)
        elif isinstance(segment, int):
            path, current = join_path(path, segment), _args(current, 0)
        else:
            path, current = join_path(path, str(segment)), None
    return path, _unwrap(current)


def _field_annotation(model: type[BaseModel], alias: str) -> Any:
    for name, field in model.model_fields.items():
        if alias in (field.alias, name):
            return field.annotation
    return None


def _args(annotation: Any, index: int) -> Any:
    args = get_args(annotation)
    return args[index] if len(args) > index else None


def _unwrap(annotation: Any) -> Any:
    """Strip Annotated and Optional wrappers (a union with more than one real member is left as is)."""
    while True:
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            annotation = get_args(annotation)[0]
            continue
        if origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation
