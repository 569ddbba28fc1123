"""The pydantic base every API model shares, and the scalar types they use.

Invariants:
- Models are frozen; attribute names are snake_case, input and output use the camelCase JSON names of the
  Go types (``populate_by_name`` accepts either on input, ``dump()`` emits the JSON names and omits unset
  fields, so a dump of a parsed manifest is the manifest minus nothing it said).
- Unknown fields are kept (``extra="allow"``): Karmada adds fields release by release and a user's manifest
  from a newer Karmada must still apply. The store keeps the raw dict; models are for validation and typed
  access.
- Scalars are strict the way Go's JSON decoding is: ``"3"`` is not an int, ``1`` is not a string, ``"true"``
  is not a bool, ``3.0`` and ``1e30`` are not ints. Validation error locations use the JSON (alias) names.
- Integers carry the range of the Go field they mirror: ``Int32`` (``int32``), ``Int64`` (``int64``, and Go's
  ``int``, which the CRD schemas leave unformatted and the API server decodes as int64), ``Uint64``
  (``uint``). An out-of-range value is refused here, never wrapped or clamped later.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from federation.model.quantity import parse_quantity

__all__ = [
    "DOCUMENTED",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "UINT64_MAX",
    "Field",
    "frozen_json",
    "Int32",
    "Int64",
    "KubeModel",
    "QuantityValue",
    "StrictBool",
    "StrictInt",
    "StrictStr",
    "Uint64",
]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1

Int32 = Annotated[StrictInt, Field(ge=INT32_MIN, le=INT32_MAX)]
Int64 = Annotated[StrictInt, Field(ge=INT64_MIN, le=INT64_MAX)]
Uint64 = Annotated[StrictInt, Field(ge=0, le=UINT64_MAX)]


def _quantity(value: Any) -> str:
    """Accept what Kubernetes accepts for a Quantity (string or number) and keep it as its string form."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"invalid quantity {value!r}: expected a string or a number")
    parse_quantity(value)
    return value if isinstance(value, str) else str(value)


QuantityValue = Annotated[str, BeforeValidator(_quantity)]


# For the classes whose field docs ``kubectl explain`` shows (the OpenAPI documents read attribute
# docstrings): pydantic reads the class source for them, which costs import time, so not on every model.
DOCUMENTED = ConfigDict(use_attribute_docstrings=True)


class KubeModel(BaseModel):
    """Frozen, camelCase-aliased, forward-compatible base for Kubernetes/Karmada API structs."""

    model_config = ConfigDict(
        frozen=True,
        populate_by_name=True,
        extra="allow",
        alias_generator=to_camel,
        loc_by_alias=True,
    )

    def dump(self) -> dict[str, Any]:
        """The JSON form: camelCase names, unset fields omitted, unknown fields kept."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


# Models' JSON remembered per object: the scheduler keys every binding's filter verdicts by its placement's
# JSON, and a pass's bindings share a few placement objects (``planner.placement_of``). An entry holds its
# model, so the id() it is filed under names no other object while it lives; emptied when full.
_JSON_OF: dict[int, tuple[BaseModel, str]] = {}
JSON_CACHE_LIMIT = 1024


def frozen_json(model: BaseModel) -> str:
    """``model.model_dump_json()``, computed once per model object (models are frozen, never changed)."""
    entry = _JSON_OF.get(id(model))
    if entry is not None and entry[0] is model:
        return entry[1]
    text = model.model_dump_json()
    if len(_JSON_OF) >= JSON_CACHE_LIMIT:
        _JSON_OF.clear()
    _JSON_OF[id(model)] = (model, text)
    return text
