"""Label selectors (``metav1.LabelSelector`` and the ``?labelSelector=`` string syntax) and name syntax rules.

Invariants:
- Matching follows Kubernetes exactly: ``In``/``=``/``==`` need the key present with a listed value;
  ``NotIn``/``!=`` also match when the key is absent; ``Exists``/``DoesNotExist`` test presence only.
- An empty selector (no matchLabels, no matchExpressions; or the empty string) matches everything. Callers
  that must treat a *missing* selector differently (Kubernetes: nil matches nothing) decide that themselves.
- ``LabelSelector.matches`` and ``parse_selector(str(selector.to_selector())).matches`` agree on every label
  set (a Hypothesis property in tests/model checks this).
- The syntax checkers return a list of messages (empty when valid), like apimachinery's ``IsQualifiedName``.
- Supported string operators: ``=``, ``==``, ``!=``, ``in``, ``notin``, bare key (exists), ``!key``. The
  numeric ``<``/``>`` operators of apimachinery are rejected with a clear error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from federation.model.base import KubeModel, StrictStr
from federation.model.meta import FieldError, invalid, join_path, key_path, required

# ---------------------------------------------------------------------------------------------------------
# Name syntax (apimachinery/pkg/util/validation)

_NAME_PART_RE: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_LABEL_RE: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN_RE: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1035_LABEL_RE: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_CONFIG_KEY_RE: Final = re.compile(r"^[-._a-zA-Z0-9]+$")
_NAME_CHARS: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)


def is_dns1123_label(value: str) -> list[str]:
    """RFC 1123 label: at most 63 lowercase alphanumerics or '-', alphanumeric at both ends."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1123_LABEL_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc')"
        )
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain: at most 253 characters, dot-separated DNS labels."""
    errors: list[str] = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com')"
        )
    return errors


def is_dns1035_label(value: str) -> list[str]:
    """RFC 1035 label (Service names): like a DNS-1123 label, but it must start with a letter."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1035_LABEL_RE.match(value):
        errors.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character (e.g. 'my-name', or 'abc-123')"
        )
    return errors


def is_path_segment_name(value: str) -> list[str]:
    """apimachinery ``IsValidPathSegmentName`` (RBAC names such as ``system:aggregate-to-view``): anything
    that can be one URL path segment."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def is_config_map_key(value: str) -> list[str]:
    """A ConfigMap or Secret data key: at most 253 of ``[-._a-zA-Z0-9]``, and not ``.`` or ``..``-prefixed."""
    errors: list[str] = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_KEY_RE.match(value):
        errors.append(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
            "(e.g. 'key.name', or 'KEY_NAME', or 'key-name')"
        )
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def is_qualified_name(value: str) -> list[str]:
    """A label/annotation key: ``[prefix/]name``, prefix a DNS subdomain, name at most 63 characters."""
    prefix, slash, name = value.rpartition("/")
    if slash and "/" in prefix:
        return ["a qualified name must consist of an optional DNS subdomain prefix, '/', and a name"]
    errors: list[str] = []
    if slash:
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {m}" for m in is_dns1123_subdomain(prefix))
    if not name:
        errors.append("name part must be non-empty")
        return errors
    if len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _NAME_PART_RE.match(name):
        errors.append(f"name part {_NAME_CHARS} (e.g. 'MyName', 'my.name', or '123-abc')")
    return errors


def is_valid_label_value(value: str) -> list[str]:
    """A label value: empty, or at most 63 characters of the name alphabet."""
    if value == "":
        return []
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _NAME_PART_RE.match(value):
        errors.append(f"a valid label {_NAME_CHARS} (e.g. 'MyValue', or 'my_value', or '12345')")
    return errors


def validate_labels(labels: Mapping[str, object], path: str) -> list[FieldError]:
    """Every key a qualified name and every value a string that is a valid label value."""
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors.extend(invalid(path, key, m) for m in is_qualified_name(str(key)))
        if not isinstance(value, str):
            errors.append(invalid(key_path(path, str(key)), value, "label values must be strings"))
            continue
        errors.extend(invalid(key_path(path, str(key)), value, m) for m in is_valid_label_value(value))
    return errors


# ---------------------------------------------------------------------------------------------------------
# Parsed requirements (the common form behind both selector syntaxes)

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement; ``values`` is sorted and de-duplicated, empty for Exists/DoesNotExist."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if len(self.values) == 1:  # the "=" form also round-trips an empty value ("a=")
            sign = "=" if self.operator == "In" else "!="
            return f"{self.key}{sign}{self.values[0]}"
        word = "in" if self.operator == "In" else "notin"
        return f"{self.key} {word} ({','.join(self.values)})"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; no requirements matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def is_empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def make_requirement(key: str, operator: Operator, values: tuple[str, ...] | list[str] = ()) -> Requirement:
    """Build a checked requirement; ValueError names the bad key, value or operator/values mismatch."""
    problems = is_qualified_name(key)
    if problems:
        raise ValueError(f"invalid label key {key!r}: {'; '.join(problems)}")
    for value in values:
        bad = is_valid_label_value(value)
        if bad:
            raise ValueError(f"invalid label value {value!r} for key {key!r}: {'; '.join(bad)}")
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"requirement on {key!r}: operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"requirement on {key!r}: operator {operator} takes no values")
    return Requirement(key, operator, tuple(sorted(set(values))))


# ---------------------------------------------------------------------------------------------------------
# metav1.LabelSelector


class LabelSelectorRequirement(KubeModel):
    """``{key, operator, values}`` of ``matchExpressions``."""

    key: StrictStr
    operator: Operator
    values: tuple[StrictStr, ...] | None = None


class LabelSelector(KubeModel):
    """``metav1.LabelSelector``: matchLabels AND every matchExpression; empty matches everything."""

    match_labels: dict[StrictStr, StrictStr] | None = None
    match_expressions: tuple[LabelSelectorRequirement, ...] | None = None

    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in (self.match_labels or {}).items():
            if labels.get(key) != value:
                return False
        return all(_expression_matches(e, labels) for e in self.match_expressions or ())

    def to_selector(self) -> Selector:
        """The equivalent requirement list (raises ValueError on a syntactically invalid selector)."""
        reqs = [make_requirement(k, "In", (v,)) for k, v in sorted((self.match_labels or {}).items())]
        reqs.extend(make_requirement(e.key, e.operator, e.values or ()) for e in self.match_expressions or ())
        return Selector(tuple(reqs))


def _expression_matches(expression: LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    values = tuple(expression.values or ())
    return Requirement(expression.key, expression.operator, values).matches(labels)


def validate_label_selector(selector: LabelSelector, path: str) -> list[FieldError]:
    """Kubernetes' ValidateLabelSelector: key/value syntax and operator/values agreement."""
    errors = validate_labels(selector.match_labels or {}, join_path(path, "matchLabels"))
    for i, expression in enumerate(selector.match_expressions or ()):
        errors.extend(_validate_expression(expression, join_path(path, "matchExpressions", i)))
    return errors


def _validate_expression(expression: LabelSelectorRequirement, path: str) -> list[FieldError]:
    errors = [invalid(join_path(path, "key"), expression.key, m) for m in is_qualified_name(expression.key)]
    values = expression.values or ()
    if expression.operator in ("In", "NotIn") and not values:
        errors.append(
            required(join_path(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
        )
    if expression.operator in ("Exists", "DoesNotExist") and values:
        errors.append(
            invalid(
                join_path(path, "values"),
                list(values),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )
        )
    return errors


# ---------------------------------------------------------------------------------------------------------
# The string syntax: "a=b,c!=d,e in (x,y),f notin (z),g,!h"

_SPECIAL: Final = "!=(),<>"
_TOKEN_RE: Final = re.compile(r"\s*(?:(==|!=|[=!(),<>])|([^\s!=(),<>]+))")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN_RE.match(text, pos)
        if match is None:  # pragma: no cover - the two alternatives cover every non-space character
            raise ValueError(f"invalid label selector {text!r}: unexpected character at {pos}")
        tokens.append(match.group(1) or match.group(2))
        pos = match.end()
    return tokens


class _Parser:
    """Recursive-descent parser over the token list; every error names the selector text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def fail(self, detail: str) -> ValueError:
        return ValueError(f"invalid label selector {self.text!r}: {detail}")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.pos += 1
        return token

    def identifier(self, what: str) -> str:
        token = self.take()
        if token is None or (len(token) <= 2 and token[0] in _SPECIAL):
            raise self.fail(f"expected {what}, found {token or 'end of input'!r}")
        return token

    def parse(self) -> Selector:
        requirements: list[Requirement] = []
        if self.peek() is None:
            return Selector()
        while True:
            requirements.append(self.requirement())
            token = self.take()
            if token is None:
                return Selector(tuple(requirements))
            if token != ",":
                raise self.fail(f"expected ',' between requirements, found {token!r}")

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            return self.checked(self.identifier("a label key after '!'"), "DoesNotExist", ())
        key = self.identifier("a label key")
        op = self.peek()
        if op is None or op == ",":
            return self.checked(key, "Exists", ())
        self.take()
        if op in ("=", "=="):
            return self.checked(key, "In", (self.single_value(),))
        if op == "!=":
            return self.checked(key, "NotIn", (self.single_value(),))
        if op in ("in", "notin"):
            return self.checked(key, "In" if op == "in" else "NotIn", self.value_set(op))
        if op in ("<", ">"):
            raise self.fail(f"operator {op!r} is not supported")
        raise self.fail(f"expected an operator (=, ==, !=, in, notin) after {key!r}, found {op!r}")

    def single_value(self) -> str:
        token = self.peek()
        if token is None or token == ",":
            return ""
        return self.identifier("a label value")

    def value_set(self, op: str) -> tuple[str, ...]:
        if self.take() != "(":
            raise self.fail(f"expected '(' after {op!r}")
        if self.peek() == ")":
            raise self.fail(f"the value set of {op!r} must not be empty")
        values: list[str] = []
        while True:
            token = self.peek()
            values.append("" if token in (",", ")") else self.identifier("a label value"))
            token = self.take()
            if token == ")":
                return tuple(values)
            if token != ",":
                raise self.fail(f"expected ',' or ')' in the value set of {op!r}, found {token or 'end'!r}")

    def checked(self, key: str, operator: Operator, values: tuple[str, ...]) -> Requirement:
        try:
            return make_requirement(key, operator, values)
        except ValueError as exc:
            raise self.fail(str(exc)) from None


def parse_selector(text: str) -> Selector:
    """Parse the ``labelSelector`` query syntax; ValueError with a clear message on bad syntax."""
    return _Parser(text).parse()
