"""The pydantic base every API model shares, and the scalar types they use.

Invariants:
- Models are frozen; attribute names are snake_case, input and output use the camelCase JSON names of the
  Go types (``populate_by_name`` accepts either on input, ``dump()`` emits the JSON names and omits unset
  fields, so a dump of a parsed manifest is the manifest minus nothing it said).
- Unknown fields are kept (``extra="allow"``): Karmada adds fields release by release and a user's manifest
  from a newer Karmada must still apply. The store keeps the raw dict; models are for validation and typed
  access.
- Scalars are strict the way Go's JSON decoding is: ``"3"`` is not an int, ``1`` is not a string, ``"true"``
  is not a bool. Validation error locations use the JSON (alias) names.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from federation.model.quantity import parse_quantity

__all__ = [
    "Field",
    "Int32",
    "KubeModel",
    "QuantityValue",
    "StrictBool",
    "StrictInt",
    "StrictStr",
]

Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]


def _quantity(value: Any) -> str:
    """Accept what Kubernetes accepts for a Quantity (string or number) and keep it as its string form."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"invalid quantity {value!r}: expected a string or a number")
    parse_quantity(value)
    return value if isinstance(value, str) else str(value)


QuantityValue = Annotated[str, BeforeValidator(_quantity)]


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
