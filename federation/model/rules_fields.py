"""Typed reads of raw manifest fields for the built-in kinds, which have no pydantic model: each read returns
the value when it has the JSON type Kubernetes' Go struct declares, and the field error when it has not.

Invariants:
- JSON ``null`` is the same as an absent field, as Go's decoder treats it (a nil pointer, slice or map; the
  zero value of a scalar): ``replicas: null`` is unset and defaults like an omitted ``replicas``.
- Integers are strict: ``bool``, ``float`` (``3.0``, ``1e30``) and strings (``"3"``) are not integers, as Go's
  decoder refuses them for an ``int32``/``int64`` field; the range is the Go type's, then the rule's bounds.
- A type error names the expected JSON type (``must be of type integer``) and shows a scalar as itself, an
  object or array by its type name (it may be large). Range errors use apimachinery's wording (``must be
  greater than or equal to 0``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from federation.model.base import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from federation.model.meta import FieldError, invalid, join_path, key_path, not_supported

_PERCENT_RE: Final = re.compile(r"^[0-9]+%$")
_PERCENT_MESSAGE: Final = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%', or '93%')"
)
_EMPTY: Mapping[str, Any] = {}


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, Mapping) else "array"


def type_error(path: str, value: Any, expected: str) -> FieldError:
    shown = value if json_type(value) in ("boolean", "integer", "number", "string") else json_type(value)
    if isinstance(shown, str) and len(shown) > 64:
        shown = shown[:61] + "..."
    return invalid(path, shown, f"must be of type {expected}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def int_field(
    parent: Mapping[str, Any],
    key: str,
    path: str,
    *,
    minimum: int | None = 0,
    bits: int = 32,
) -> list[FieldError]:
    """An optional ``int32``/``int64`` field: its type, the Go range, and ``minimum`` (None: no minimum)."""
    value = parent.get(key)
    if value is None:
        return []
    here = join_path(path, key)
    if not is_int(value):
        return [type_error(here, value, "integer")]
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    floor = low if minimum is None else max(low, minimum)
    if value < floor:
        return [invalid(here, value, f"must be greater than or equal to {floor}")]
    if value > high:
        return [invalid(here, value, f"must be less than or equal to {high}")]
    return []


def in_range(value: Any, path: str, low: int, high: int) -> list[FieldError]:
    """An integer in ``[low, high]``, worded as apimachinery's ``InclusiveRangeError``."""
    if not is_int(value):
        return [type_error(path, value, "integer")]
    if not low <= value <= high:
        return [invalid(path, value, f"must be between {low} and {high}, inclusive")]
    return []


def object_field(
    parent: Mapping[str, Any], key: str, path: str
) -> tuple[Mapping[str, Any], list[FieldError]]:
    """An optional object: (the object or an empty one, errors)."""
    value = parent.get(key)
    if value is None or isinstance(value, Mapping):
        return value or _EMPTY, []
    return _EMPTY, [type_error(join_path(path, key), value, "object")]


def list_field(parent: Mapping[str, Any], key: str, path: str) -> tuple[list[Any], list[FieldError]]:
    """An optional array: (the list or an empty one, errors)."""
    value = parent.get(key)
    if value is None or isinstance(value, list):
        return value or [], []
    return [], [type_error(join_path(path, key), value, "array")]


def objects(values: list[Any], path: str) -> tuple[list[tuple[int, Mapping[str, Any]]], list[FieldError]]:
    """The (index, element) pairs of an array of objects; a non-object element is an error."""
    good: list[tuple[int, Mapping[str, Any]]] = []
    errors: list[FieldError] = []
    for i, element in enumerate(values):
        if isinstance(element, Mapping):
            good.append((i, element))
        else:
            errors.append(type_error(join_path(path, i), element, "object"))
    return good, errors


def string_field(parent: Mapping[str, Any], key: str, path: str) -> tuple[str, list[FieldError]]:
    """An optional string: (the string or "", errors)."""
    value = parent.get(key)
    if value is None or isinstance(value, str):
        return value or "", []
    return "", [type_error(join_path(path, key), value, "string")]


def bool_field(parent: Mapping[str, Any], key: str, path: str) -> list[FieldError]:
    value = parent.get(key)
    if value is None or isinstance(value, bool):
        return []
    return [type_error(join_path(path, key), value, "boolean")]


def string_map(parent: Mapping[str, Any], key: str, path: str) -> tuple[Mapping[str, str], list[FieldError]]:
    """An optional ``map[string]string``: (the entries whose values are strings, errors for the others)."""
    raw, errors = object_field(parent, key, path)
    good: dict[str, str] = {}
    for name, value in raw.items():
        if isinstance(value, str):
            good[str(name)] = value
        elif value is not None:
            errors.append(type_error(key_path(join_path(path, key), str(name)), value, "string"))
    return good, errors


def enum_field(
    parent: Mapping[str, Any], key: str, path: str, allowed: tuple[str, ...]
) -> tuple[str, list[FieldError]]:
    """An optional string from ``allowed`` (absent and "" mean "defaulted", which is fine)."""
    value, errors = string_field(parent, key, path)
    if value and value not in allowed:
        errors.append(not_supported(join_path(path, key), value, allowed))
    return value, errors


def int_or_percent(
    parent: Mapping[str, Any], key: str, path: str, *, at_most_100: bool = False
) -> list[FieldError]:
    """An ``IntOrString`` that must be a non-negative integer or a percentage (``25%``), with
    ``at_most_100`` no more than 100%."""
    value = parent.get(key)
    if value is None:
        return []
    here = join_path(path, key)
    if isinstance(value, str):
        if not _PERCENT_RE.match(value):
            return [invalid(here, value, _PERCENT_MESSAGE)]
        if at_most_100 and int(value[:-1]) > 100:
            return [invalid(here, value, "must not be greater than 100%")]
        return []
    if not is_int(value):
        return [type_error(here, value, "integer or string")]
    return int_field(parent, key, path)


def is_zero_int_or_percent(value: Any) -> bool:
    """True for 0 and "0%" (``IntOrString`` zero); anything unset or malformed is not zero."""
    return (is_int(value) and value == 0) or value == "0%"
