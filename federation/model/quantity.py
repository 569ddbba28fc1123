"""Kubernetes ``resource.Quantity`` parsing and formatting.

Invariants:
- ``parse_quantity`` accepts exactly Kubernetes' quantity grammar: an optionally signed decimal number (``1``,
  ``1.5``, ``.5``, ``+2``) followed by one suffix: binary SI (``Ki Mi Gi Ti Pi Ei``), decimal SI (``n u m k M
  G T P E`` or none) or a decimal exponent (``e3``, ``E-2``). Surrounding whitespace is rejected, like
  Kubernetes does. ``int`` and ``float`` inputs (what YAML produces for ``cpu: 2``) are accepted; ``bool`` is
  not.
- Results are exact ``Decimal`` values; no float arithmetic ever happens on a string input. Like Kubernetes'
  ``ParseQuantity``, a value finer than a nano-unit is rounded up (away from zero) to whole nano-units:
  ``1e-12`` is ``1n``, so no value carries more than nine decimal places.
- ``to_milli`` and ``to_int`` round **up**, like ``Quantity.MilliValue()`` / ``Quantity.Value()``: a request
  of ``0.0001`` CPU is 1m, never 0 (a request never shrinks by rounding).
- Every error is a ``ValueError`` whose message names the offending value (never a ``decimal`` exception);
  a well-formed value out of range raises its subclass ``QuantityRangeError``.
- ``canonical_quantity`` prints a quantity as kubectl does (Go's ``Quantity.String``): in the format it was
  written in (``128Mi`` stays ``128Mi``, never ``134217728``; ``1.5Gi`` is ``1536Mi``; ``0.5`` is ``500m``;
  ``2000`` is ``2k``), a sum in the format of its first term.
- String parses are memoized (``functools.lru_cache``, ``PARSE_CACHE_SIZE`` entries, strings of at most
  ``PARSE_CACHE_LENGTH`` characters): a control plane parses the same few quantities (``"4"``, ``"8Gi"``)
  over and over, e.g. every cluster's resource summary on every scheduler cycle. A result is a ``Decimal``,
  immutable, so callers sharing one cannot affect each other; errors are not cached (raised every time).
- A magnitude of ``MAX_MAGNITUDE`` (10^40) or more is refused. Kubernetes keeps such a value (it caps only
  binary-suffixed ones, at 2^63-1), but no resource is that large, and an exact integer of ``1e999999`` takes
  half a minute to build: one such request must not stall admission or a controller.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import ROUND_UP, Decimal, DecimalException, localcontext
from typing import Final

QuantityInput = str | int | float | Decimal

MAX_MAGNITUDE: Final = Decimal("1e40")
_NANO: Final = Decimal("1e-9")
# Enough digits for any value below MAX_MAGNITUDE in nano-units, so scaling and rounding stay exact.
_PRECISION: Final = 60
# An exponent this long is out of range whatever the number is; checked before Decimal sees it.
_MAX_EXPONENT_DIGITS: Final = 6
# The parse cache: a bound on its memory (entries x length) that real quantities never reach.
PARSE_CACHE_SIZE: Final = 4096
PARSE_CACHE_LENGTH: Final = 64

_BINARY: Final[dict[str, int]] = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}
_DECIMAL: Final[dict[str, Decimal]] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# number, then either a decimal exponent (e/E followed by a signed integer) or an SI suffix.
_QUANTITY_RE: Final = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?))$"
)


BINARY_SI: Final = "BinarySI"
DECIMAL_SI: Final = "DecimalSI"
DECIMAL_EXPONENT: Final = "DecimalExponent"
_BINARY_SUFFIXES: Final = ("", *_BINARY)
_DECIMAL_SUFFIXES: Final = {int(factor.adjusted()): suffix for suffix, factor in _DECIMAL.items()}


class QuantityRangeError(ValueError):
    """A well-formed quantity too large (or with too long an exponent) to accept; ``detail`` says which."""

    def __init__(self, original: object, detail: str) -> None:
        self.detail = detail
        super().__init__(f"invalid quantity {_short(original)}: {detail}")


def parse_quantity(value: QuantityInput) -> Decimal:
    """Parse a quantity (``"500m"``, ``"32Gi"``, ``"1e3"``, ``2``, ``1.5``) into an exact Decimal."""
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}: booleans are not quantities")
    if isinstance(value, Decimal):
        return _finish(_check_finite(value, value), value)
    if isinstance(value, int):
        return _finish(_check_magnitude(value, value), value)
    if isinstance(value, float):
        return _finish(_check_finite(Decimal(repr(value)), value), value)
    if isinstance(value, str):
        return _parse_cached(value) if len(value) <= PARSE_CACHE_LENGTH else _parse_string(value)
    raise ValueError(f"invalid quantity {value!r}: expected a string or a number")


def _check_finite(number: Decimal, original: object) -> Decimal:
    if not number.is_finite():
        raise ValueError(f"invalid quantity {original!r}: must be a finite number")
    return number


def _check_magnitude(number: Decimal | int, original: object) -> Decimal:
    if abs(Decimal(number)) >= MAX_MAGNITUDE:
        raise QuantityRangeError(original, "must be less than 1e40")
    return Decimal(number)


def _short(original: object) -> str:
    text = repr(original)
    return text if len(text) <= 40 else text[:37] + "..."


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse_cached(text: str) -> Decimal:
    return _parse_string(text)


def _parse_string(text: str) -> Decimal:
    match = _QUANTITY_RE.match(text)
    if match is None:
        raise ValueError(
            f"invalid quantity {text!r}: expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)"
        )
    exponent = match["exp"]
    if exponent is not None and len(exponent[1:].lstrip("+-").lstrip("0")) > _MAX_EXPONENT_DIGITS:
        raise QuantityRangeError(text, "the exponent is out of range")
    try:
        with localcontext() as ctx:
            ctx.prec = _PRECISION
            return _finish(_scaled(Decimal(match["num"]), exponent, match["suffix"] or ""), text)
    except DecimalException as exc:  # beyond the decimal context's exponent range
        raise QuantityRangeError(text, "the exponent is out of range") from exc


def _scaled(number: Decimal, exponent: str | None, suffix: str) -> Decimal:
    if exponent is not None:
        return number.scaleb(int(exponent[1:]))
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    return number * _DECIMAL[suffix]


def _finish(number: Decimal, original: object) -> Decimal:
    """Refuse a too-large value (before anything slow), round up to nano-units, tidy."""
    number = _check_magnitude(number, original)
    if number.as_tuple().exponent < -9:  # type: ignore[operator]  # finite here, so an int
        with localcontext() as ctx:
            ctx.prec = _PRECISION
            number = number.quantize(_NANO, rounding=ROUND_UP)
    return _tidy(number)


def _tidy(number: Decimal) -> Decimal:
    """Whole numbers as plain integers (``Decimal(1000)``, not ``Decimal('1E+3')``): equal, but readable."""
    if number == number.to_integral_value():
        return Decimal(int(number))
    return number


def to_milli(value: QuantityInput) -> int:
    """The quantity in thousandths, rounded up (CPU: ``"500m"`` → 500, ``"2"`` → 2000)."""
    return _ceil(parse_quantity(value) * 1000)


def to_int(value: QuantityInput) -> int:
    """The quantity as a whole number, rounded up (memory, storage, pods, extended resources)."""
    return _ceil(parse_quantity(value))


def _ceil(number: Decimal) -> int:
    return math.ceil(number)


def is_quantity(value: object) -> bool:
    """True iff ``value`` parses as a quantity."""
    try:
        parse_quantity(value)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def format_quantity(value: QuantityInput, *, binary: bool = False) -> str:
    """Render a quantity in a canonical Kubernetes form that ``parse_quantity`` reads back exactly.

    Whole numbers print plainly (``"3"``), or with the largest exact binary suffix when ``binary`` is set
    (``"32Gi"``). Fractions that are whole thousandths print in milli-units (``"500m"``, ``"1500m"``);
    anything finer prints as a plain decimal (``"0.0001"``).
    """
    number = parse_quantity(value)
    if number == number.to_integral_value():
        return _format_integer(int(number), binary)
    milli = number * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return _plain(number)


def _format_integer(whole: int, binary: bool) -> str:
    if binary and whole != 0:
        for suffix, factor in reversed(_BINARY.items()):
            if whole % factor == 0:
                return f"{whole // factor}{suffix}"
    return str(whole)


def _plain(number: Decimal) -> str:
    return format(number.normalize(), "f")


def quantity_format(value: QuantityInput) -> str:
    """The format Kubernetes keeps with a parsed quantity and prints it back in: ``BinarySI`` for a Ki..Ei
    suffix, ``DecimalExponent`` for an exponent (``1e3``), else (numbers too) ``DecimalSI``."""
    match = _QUANTITY_RE.match(value) if isinstance(value, str) else None
    if match is not None and match["exp"]:
        return DECIMAL_EXPONENT
    if match is not None and match["suffix"] in _BINARY:
        return BINARY_SI
    return DECIMAL_SI


def canonical_quantity(value: QuantityInput, fmt: str | None = None) -> str:
    """``value`` as kubectl prints it (Go's ``CanonicalizeBytes``), in ``fmt`` (default: ``value``'s own).

    BinarySI: the largest binary suffix that keeps the number whole; below 1024 or fractional it prints as
    DecimalSI. DecimalSI/DecimalExponent: the number with its exponent a multiple of three, as a suffix
    (``m``, ``k``, ``M`` ...) or as ``e<exponent>``.
    """
    number = parse_quantity(value)
    fmt = fmt or quantity_format(value)
    if number == 0:
        return "0"
    if fmt == BINARY_SI and abs(number) >= 1024 and number == number.to_integral_value():
        return _base1024(int(number))
    return _base1000(number, exponent_form=fmt == DECIMAL_EXPONENT)


def _base1024(whole: int) -> str:
    power = 0
    while power < len(_BINARY_SUFFIXES) - 1 and whole % 1024 == 0:
        whole //= 1024
        power += 1
    return f"{whole}{_BINARY_SUFFIXES[power]}"


def _base1000(number: Decimal, *, exponent_form: bool) -> str:
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        sign, digits, exponent = number.normalize().as_tuple()
    assert isinstance(exponent, int)  # finite: parse_quantity refuses anything else
    shift = exponent % 3  # down to a multiple of three, the mantissa taking the digits
    mantissa = int("".join(map(str, digits))) * 10**shift
    exponent -= shift
    text = f"{'-' if sign else ''}{mantissa}"
    if exponent == 0:
        return text
    if not exponent_form and exponent in _DECIMAL_SUFFIXES:
        return text + _DECIMAL_SUFFIXES[exponent]
    return f"{text}e{exponent}"
