"""Kinds defined by applied CustomResourceDefinitions (apiextensions.k8s.io/v1), served as kube-apiserver
serves them.

A CRD is stored like any resource template (kind CustomResourceDefinition, a built-in kind of the registry).
Once applied, the kind it defines is served at `/apis/{spec.group}/{version}/[namespaces/{ns}/]{plural}`.

Invariants:
- A CRD's name is `{spec.names.plural}.{spec.group}` (admission refuses any other, as kube-apiserver does),
  so the definition of the kind at `/apis/{group}/{version}/{plural}` is one lookup by name.
- A defined kind is served only at the versions the CRD marks `served: true`, namespaced or cluster-scoped
  per `spec.scope`, with a `status` subresource only where that version declares one.
- Groups with a registered kind (the core group, the built-in groups, Karmada's and Kosmos') are closed:
  the registry (model/kinds.py) alone says what they serve, whatever CRD names them. An unknown version of
  `policy.karmada.io` is never a CRD's.
- Reading a stored CRD never fails: one that does not have the shape admission requires (stored before
  admission checked it) defines nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError
from sqlalchemy.orm import Session

from federation.model import kinds
from federation.model.base import KubeModel, StrictBool, StrictStr
from federation.model.kinds import KindInfo
from federation.model.meta import FieldError, invalid, join_path, required
from federation.model.validation import pydantic_errors
from federation.store.repository import ObjectRepository

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"
CLOSED_GROUPS: frozenset[str] = frozenset(info.group for info in kinds.all_kinds())
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS1035_MESSAGE = (
    "a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class _Names(KubeModel):
    plural: StrictStr
    kind: StrictStr
    singular: StrictStr | None = None
    short_names: list[StrictStr] | None = None
    list_kind: StrictStr | None = None


class _Subresources(KubeModel):
    status: dict[str, Any] | None = None


class _Version(KubeModel):
    name: StrictStr
    served: StrictBool
    storage: StrictBool
    subresources: _Subresources | None = None


class _Spec(KubeModel):
    """The part of a CRD's spec that decides what it serves (the schema is the member's business)."""

    group: StrictStr
    names: _Names
    scope: Literal["Namespaced", "Cluster"]
    versions: list[_Version] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class Definition:
    """What one CRD serves."""

    spec: _Spec

    def kind_at(self, version: str) -> KindInfo | None:
        """The kind served at ``version``, or None when the CRD does not serve that version."""
        for served in self.spec.versions:
            if served.name == version and served.served:
                return self._info(served)
        return None

    def served_kinds(self) -> list[KindInfo]:
        return [self._info(v) for v in self.spec.versions if v.served]

    def _info(self, version: _Version) -> KindInfo:
        names = self.spec.names
        has_status = version.subresources is not None and version.subresources.status is not None
        return KindInfo(
            group=self.spec.group,
            version=version.name,
            kind=names.kind,
            plural=names.plural,
            singular=names.singular or names.kind.lower(),
            short_names=tuple(names.short_names or ()),
            namespaced=self.spec.scope == "Namespaced",
            has_status=has_status,
        )


def definition(crd: Mapping[str, Any]) -> Definition | None:
    """What a stored CRD serves; None when it serves nothing (malformed, or a closed group)."""
    spec, errors = _checked(crd)
    if spec is None or errors or spec.group in CLOSED_GROUPS:
        return None
    return Definition(spec)


def served_kind(session: Session, group: str, version: str, plural: str) -> KindInfo | None:
    """The CRD-defined kind served at ``/apis/{group}/{version}/{plural}``, or None."""
    if group in CLOSED_GROUPS:
        return None
    crd = _repository(session).get(None, f"{plural}.{group}")
    found = None if crd is None else definition(crd)
    return None if found is None else found.kind_at(version)


def served_kinds(session: Session) -> list[KindInfo]:
    """Every kind and version that applied CRDs serve (for discovery)."""
    crds, _ = _repository(session).list()
    return [info for crd in crds if (found := definition(crd)) is not None for info in found.served_kinds()]


def served_versions(session: Session) -> list[tuple[KindInfo, Mapping[str, Any]]]:
    """Every kind and version applied CRDs serve, with the stored version entry (its schema and printer
    columns), for the OpenAPI documents."""
    crds, _ = _repository(session).list()
    return [
        (info, _version_entry(crd, info.version))
        for crd in crds
        if (found := definition(crd)) is not None
        for info in found.served_kinds()
    ]


def version_entry(session: Session, info: KindInfo) -> Mapping[str, Any]:
    """The stored CRD's ``spec.versions`` entry for the kind and version ``info`` names ({} when none): where
    its ``additionalPrinterColumns`` and ``schema`` are."""
    crd = _repository(session).get(None, f"{info.plural}.{info.group}")
    return {} if crd is None else _version_entry(crd, info.version)


def _version_entry(crd: Mapping[str, Any], version: str) -> Mapping[str, Any]:
    versions = (crd.get("spec") or {}).get("versions") or []
    found = (v for v in versions if isinstance(v, Mapping) and v.get("name") == version)
    return next(found, {})


def _repository(session: Session) -> ObjectRepository:
    return ObjectRepository(session, CRD_KIND, CRD_API_VERSION)


# -- admission ---------------------------------------------------------------------------------------


def is_crd(info: KindInfo) -> bool:
    return info.api_version == CRD_API_VERSION and info.kind == CRD_KIND


def definition_errors(crd: Mapping[str, Any]) -> list[FieldError]:
    """What kube-apiserver would refuse in the parts of a CRD that say what it serves (empty when fine)."""
    return _checked(crd)[1]


def _checked(crd: Mapping[str, Any]) -> tuple[_Spec | None, list[FieldError]]:
    """The parsed spec (None when its shape is wrong) and every error admission reports for it."""
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return None, [required("spec")]
    try:
        parsed = _Spec.model_validate(spec)
    except ValidationError:
        return None, pydantic_errors(_Spec, spec, prefix="spec")
    rules = [*_name_errors(crd, parsed), *_group_errors(parsed), *_names_errors(parsed)]
    return parsed, [*rules, *_version_errors(parsed)]


def _name_errors(crd: Mapping[str, Any], spec: _Spec) -> list[FieldError]:
    expected = f"{spec.names.plural}.{spec.group}"
    name = (crd.get("metadata") or {}).get("name")
    if name != expected:
        return [invalid("metadata.name", name, f'must be spec.names.plural+"."+spec.group ({expected})')]
    return []


def _group_errors(spec: _Spec) -> list[FieldError]:
    if "." not in spec.group or not _DNS1123_SUBDOMAIN.match(spec.group):
        return [invalid("spec.group", spec.group, "should be a domain with at least one dot")]
    return []


def _names_errors(spec: _Spec) -> list[FieldError]:
    names = spec.names
    labels = [("plural", names.plural), ("kind", names.kind.lower())]
    labels += [("singular", names.singular)] if names.singular is not None else []
    labels += [(join_path("shortNames", i), short) for i, short in enumerate(names.short_names or [])]
    return [
        invalid(join_path("spec.names", field), value, _DNS1035_MESSAGE)
        for field, value in labels
        if not _DNS1035_LABEL.match(value)
    ]


def _version_errors(spec: _Spec) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, version in enumerate(spec.versions):
        path = join_path("spec.versions", index, "name")
        if not _DNS1035_LABEL.match(version.name):
            errors.append(invalid(path, version.name, _DNS1035_MESSAGE))
        if version.name in seen:
            errors.append(invalid(path, version.name, "must be unique"))
        seen.add(version.name)
    if sum(v.storage for v in spec.versions) != 1:
        errors.append(invalid("spec.versions", "", "must have exactly one version marked as storage version"))
    return errors
