"""Table answers: a GET whose ``Accept`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` (or
``v=v1beta1``) gets the object or list as a ``meta.k8s.io`` Table, as kube-apiserver answers ``kubectl get``.

Invariants:
- Content negotiation follows the order of the Accept header: the first media range we can serve wins, so
  ``as=Table...,application/json`` gets a Table and ``application/json,...as=Table`` the plain object.
- ``includeObject`` is ``None``, ``Metadata`` (the default) or ``Object``; anything else is a 400.
- A registered kind prints with ``model.tables_builtin.printer_for``; a CRD-defined kind with the
  ``additionalPrinterColumns`` of the served version of its stored CRD (read in the caller's session).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from federation.api import crds
from federation.api.status import bad_request
from federation.model import kinds, tables
from federation.model.kinds import KindInfo
from federation.model.tables_builtin import printer_for

JSON_TYPES = frozenset({"application/json", "application/*", "*/*"})


def requested_version(accept: str | None) -> str | None:
    """The Table version the Accept header asks for before any plain JSON, or None."""
    for media_range in (accept or "").split(","):
        media, params = _media_range(media_range)
        if params.get("as") == "Table" and media == "application/json":
            if params.get("g") == tables.TABLE_GROUP and params.get("v") in tables.TABLE_VERSIONS:
                return params["v"]
            continue  # a Table version we do not serve: the next range may still be one we do
        if media in JSON_TYPES and "as" not in params:
            return None
    return None


def _media_range(text: str) -> tuple[str, dict[str, str]]:
    media, *parameters = (part.strip() for part in text.split(";"))
    params = {}
    for parameter in parameters:
        key, _, value = parameter.partition("=")
        params[key.strip().lower()] = value.strip().strip('"')
    return media.lower(), params


def media_type(version: str) -> str:
    """The Content-Type of a Table answer, as kube-apiserver labels it."""
    return f"application/json;as=Table;v={version};g={tables.TABLE_GROUP}"


def include_object(value: str | None) -> str:
    if value in (None, ""):
        return "Metadata"
    if value not in tables.INCLUDE_OBJECT:
        raise bad_request(
            f"includeObject: Unsupported value: {value!r}: supported values: None, Metadata, Object"
        )
    return str(value)


def columns(session: Session, info: KindInfo) -> tuple[tables.Column, ...]:
    """The columns of the kind served at ``info``: the registry's printer, or the applied CRD's columns."""
    if kinds.by_gvk(info.api_version, info.kind) is not None:
        return printer_for(info.group, info.kind)
    return tables.crd_columns(crds.version_entry(session, info).get("additionalPrinterColumns"))


def as_table(
    session: Session,
    info: KindInfo,
    answer: Mapping[str, Any],
    version: str,
    include: str | None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A GET's answer (one object, or a list with ``items``) as a Table."""
    listed = "items" in answer and str(answer.get("kind", "")).endswith("List")
    items = list(answer.get("items") or []) if listed else [answer]
    meta = answer.get("metadata") or {}
    return tables.table(
        columns(session, info),
        items,
        now=now or datetime.now(UTC),
        include_object=include_object(include),
        version=version,
        resource_version=str(meta.get("resourceVersion") or ""),
        continue_token=meta.get("continue") if listed else None,
    )
