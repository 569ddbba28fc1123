"""Object metadata and conditions, field errors in Kubernetes' shape, and the exception that carries them.

Invariants:
- ``FieldError.field`` is a Kubernetes field path: dotted JSON (alias) names with list indices and map keys in
  brackets, e.g. ``spec.placement.spreadConstraints[0].maxGroups`` or ``metadata.labels[app]``. The API layer
  copies it verbatim into ``Status.details.causes[].field``.
- ``FieldError.reason`` is one of the six ``REASON_*`` values, which are Kubernetes' ``CauseType`` strings.
- Messages follow Kubernetes' wording (``Invalid value: "x": ...``, ``Required value``, ``Unsupported value``,
  ``Duplicate value``, ``Forbidden``, ``Too long``) so users see what ``kubectl`` would have shown them.
- ``ValidationFailed`` always carries at least one error; validators collect every error, never just the
  first.
- ``ObjectMeta``/``Condition`` are shape-only models (like every model here); name rules live in validation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from federation.model.base import Int64, KubeModel, StrictStr

Reason = Literal[
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueNotSupported",
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueTooLong",
]

REASON_INVALID: Final = "FieldValueInvalid"
REASON_REQUIRED: Final = "FieldValueRequired"
REASON_NOT_SUPPORTED: Final = "FieldValueNotSupported"
REASON_DUPLICATE: Final = "FieldValueDuplicate"
REASON_FORBIDDEN: Final = "FieldValueForbidden"
REASON_TOO_LONG: Final = "FieldValueTooLong"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One bad field: where (``field``), what is wrong (``message``) and the Kubernetes cause type."""

    field: str
    message: str
    reason: Reason = "FieldValueInvalid"

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class ValidationFailed(Exception):
    """An object failed validation; ``errors`` lists every bad field (never empty)."""

    def __init__(self, errors: Sequence[FieldError], *, kind: str = "", name: str = "") -> None:
        if not errors:
            raise ValueError("ValidationFailed needs at least one FieldError")
        self.errors: list[FieldError] = list(errors)
        self.kind = kind
        self.name = name
        super().__init__(self.summary())

    def summary(self) -> str:
        """Kubernetes' Invalid message: ``Kind "name" is invalid: [field: msg, ...]``."""
        subject = f'{self.kind or "object"} "{self.name}"' if self.name else self.kind or "object"
        details = ", ".join(str(e) for e in self.errors)
        if len(self.errors) > 1:
            details = f"[{details}]"
        return f"{subject} is invalid: {details}"


def join_path(base: str, *parts: str | int) -> str:
    """Extend a field path: names dotted, ints as ``[i]`` (``join_path("spec", "a", 0)`` → ``spec.a[0]``)."""
    path = base
    for part in parts:
        if isinstance(part, int):
            path = f"{path}[{part}]"
        else:
            path = f"{path}.{part}" if path else part
    return path


def key_path(base: str, key: str) -> str:
    """A map entry's path: ``metadata.labels[app]``."""
    return f"{base}[{key}]"


def _show(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def invalid(field: str, value: object, detail: str) -> FieldError:
    """``Invalid value: <value>: <detail>``."""
    return FieldError(field, f"Invalid value: {_show(value)}: {detail}", REASON_INVALID)


def required(field: str, detail: str = "") -> FieldError:
    """``Required value[: <detail>]``."""
    message = f"Required value: {detail}" if detail else "Required value"
    return FieldError(field, message, REASON_REQUIRED)


def not_supported(field: str, value: object, supported: Iterable[str]) -> FieldError:
    """``Unsupported value: <value>: supported values: "a", "b"``."""
    choices = ", ".join(json.dumps(s) for s in supported)
    return FieldError(
        field, f"Unsupported value: {_show(value)}: supported values: {choices}", REASON_NOT_SUPPORTED
    )


def duplicate(field: str, value: object) -> FieldError:
    """``Duplicate value: <value>``."""
    return FieldError(field, f"Duplicate value: {_show(value)}", REASON_DUPLICATE)


def forbidden(field: str, detail: str) -> FieldError:
    """``Forbidden: <detail>`` (a field that may not be set here)."""
    return FieldError(field, f"Forbidden: {detail}", REASON_FORBIDDEN)


def too_long(field: str, limit: int) -> FieldError:
    """``Too long: may not be more than <limit> bytes``."""
    return FieldError(field, f"Too long: may not be more than {limit} bytes", REASON_TOO_LONG)


# ---------------------------------------------------------------------------------------------------------
# metav1.ObjectMeta and metav1.Condition


class ObjectMeta(KubeModel):
    """The metadata fields the control plane reads; any other metadata is kept as extra."""

    name: StrictStr | None = None
    generate_name: StrictStr | None = None
    namespace: StrictStr | None = None
    uid: StrictStr | None = None
    resource_version: StrictStr | None = None
    generation: Int64 | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    labels: dict[StrictStr, StrictStr] | None = None
    annotations: dict[StrictStr, StrictStr] | None = None
    finalizers: tuple[StrictStr, ...] | None = None
    owner_references: tuple[dict[str, Any], ...] | None = None


class Condition(KubeModel):
    """``metav1.Condition`` (type, status True|False|Unknown, reason, message, lastTransitionTime)."""

    type: StrictStr
    status: Literal["True", "False", "Unknown"]
    reason: StrictStr | None = None
    message: StrictStr | None = None
    last_transition_time: datetime | None = None
    observed_generation: Int64 | None = None


def find_condition(conditions: Iterable[Condition] | None, type_: str) -> Condition | None:
    """The condition of ``type_``, or None."""
    return next((c for c in conditions or () if c.type == type_), None)


__all__ = [
    "REASON_DUPLICATE",
    "REASON_FORBIDDEN",
    "REASON_INVALID",
    "REASON_NOT_SUPPORTED",
    "REASON_REQUIRED",
    "REASON_TOO_LONG",
    "Condition",
    "FieldError",
    "ObjectMeta",
    "Reason",
    "ValidationFailed",
    "duplicate",
    "find_condition",
    "forbidden",
    "invalid",
    "join_path",
    "key_path",
    "not_supported",
    "required",
    "too_long",
]
