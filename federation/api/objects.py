"""Generic create/get/list/replace/delete for every kind, Kubernetes REST conventions.

Invariants:
- Validation runs before any write; an invalid object is a 422 Invalid listing every bad field and
  nothing is stored.
- A path serves a kind the registry knows or an applied CustomResourceDefinition defines (``crds``), and
  nothing else: any other kind, or another version of a registered group, is 404 NotFound, never stored.
- A ``resourceVersion`` a client sends (body or query) is the decimal number a read returned, or a 400.
- Users never write `status` through the main resource: it is dropped on create and preserved on
  replace. `PUT .../{name}/status` writes status only (admins and cluster agents).
- A body without `apiVersion`/`kind` takes them from the URL (as kube-apiserver defaults them); a body that
  names another kind than the URL serves is a 400.
- A create or replace by a named field manager records it in `metadata.managedFields` (operation Update,
  the fields it changed), as kube-apiserver does, so a later server-side apply knows who owns what; the
  managedFields a body carries are not taken (`patch` computes an apply's own).
- Every write is one unit of work; a controller is notified only after the commit.
- A request reads its object's row once: a create reads nothing (the store's unique key answers
  AlreadyExists), a replace or a patch hands the row it read (``Read``) to the write that follows.
- Secrets a kind carries (member credentials) never appear in an answer.
- An alias path (``kinds.by_alias_path``) serves its registered kind; an alias manifest (a WorkloadRebalancer
  spelled ``policy.karmada.io/v1alpha1``, ``spec.workload``/``workloadList``) is converted to Karmada's form
  before validation and stored only in that form; ``write_warnings`` says what was converted.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from federation.api import crds
from federation.api.paths import ObjectPath
from federation.api.status import StatusError, bad_request, conflict, invalid, not_found, success
from federation.model import kinds, labels, patching
from federation.model.cluster import stamp_no_execute_taints
from federation.model.kinds import KindInfo
from federation.model.rebalancer import canonical_form
from federation.model.validation import validate_object
from federation.store.errors import AlreadyExists, Conflict, NotFound
from federation.store.manifest import format_timestamp, join
from federation.store.repository import ObjectRepository
from federation.store.tables import ObjectMixin

Body = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Request:
    """One call on an object path: what it addresses, the kind it resolved to, and the body."""

    path: ObjectPath
    info: KindInfo
    body: Body | None = None
    manager: str | None = None  # the field manager to record; None: keep the body's managedFields


def resolve_kind(session: Any, path: ObjectPath) -> KindInfo:
    """The kind served at the path: a registered one, else one an applied CRD defines; 404 otherwise."""
    known = (
        kinds.by_path(path.group, path.version, path.plural)
        or kinds.by_alias_path(path.group, path.version, path.plural)
        or crds.served_kind(session, path.group, path.version, path.plural)
    )
    if known is None:
        message = (
            f'the server could not find the requested resource "{path.plural}" in {path.api_version}: '
            "neither a built-in kind nor defined by an applied CustomResourceDefinition"
        )
        raise StatusError(404, "NotFound", message, kind=path.plural)
    return known


def resource_version(value: Any, field: str) -> str | None:
    """A client's resourceVersion: None when absent or empty, else the decimal number a read returned."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return value
    raise bad_request(f"{field}: Invalid value: {value!r}: must be the resourceVersion a read returned")


def repository(session: Any, info: KindInfo) -> ObjectRepository:
    return ObjectRepository(session, info.kind, info.api_version)


@dataclass(frozen=True, slots=True)
class Read:
    """What this unit of work read of the object at a path: its row, None when there is none. A write that
    follows in the same unit of work takes it (``current=``) instead of reading the row again."""

    row: ObjectMixin | None


def read(session: Any, req: Request) -> Read:
    return Read(repository(session, req.info).find_row(req.path.namespace or "", req.path.name or ""))


def existing(req: Request, current: Read) -> Body:
    """The object ``current`` holds; 404 when there was none."""
    if current.row is None:
        raise not_found(req.info.resource, req.path.name or "")
    return join(current.row)


def get_object(session: Any, req: Request) -> Body:
    return existing(req, read(session, req))


def list_objects(
    session: Any, req: Request, selector: str | None, limit: int | None, token: str | None
) -> Body:
    match = _selector(selector)
    try:
        items, next_token = repository(session, req.info).list(
            req.path.namespace, selector=match, limit=limit, continue_token=token
        )
    except ValueError as exc:
        raise bad_request(f"invalid continue token: {exc}") from exc
    metadata: Body = {"resourceVersion": ""}
    if next_token:
        metadata["continue"] = next_token
    return {
        "apiVersion": req.info.api_version,
        "kind": f"{req.info.kind}List",
        "metadata": metadata,
        "items": items,
    }


def _selector(text: str | None) -> Callable[[dict[str, str]], bool] | None:
    if not text:
        return None
    try:
        parsed = labels.parse_selector(text)
    except ValueError as exc:
        raise bad_request(f"unable to parse requirement: {exc}") from exc
    return parsed.matches


def checked_body(req: Request, *, for_name: str | None) -> Body:
    """The request body after the structural checks every write shares, then validation."""
    body = req.body
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    converted = canonical_form(_identity_defaulted(req, body))
    body = converted.manifest
    _check_identity(req, body, for_name)
    resource_version(body["metadata"].get("resourceVersion"), "metadata.resourceVersion")
    errors = [*converted.errors, *validate_object(body, req.info)]
    if crds.is_crd(req.info):
        errors += [e for e in crds.definition_errors(body) if e not in errors]
    if errors:
        causes = [{"field": e.field, "message": e.message, "reason": e.reason} for e in errors]
        raise invalid(req.info.kind, str((body.get("metadata") or {}).get("name", "")), causes)
    return body


def write_warnings(req: Request) -> tuple[str, ...]:
    """What a create or replace converted from an alias form (the answer's ``Warning`` headers)."""
    return canonical_form(req.body).warnings if isinstance(req.body, dict) else ()


def identified(req: Request, body: Body, for_name: str | None) -> Body:
    """A copy of ``body`` in canonical form, apiVersion and kind defaulted from the URL, its kind, namespace
    and name checked against the URL (400 otherwise). What every write checks before anything else."""
    out = canonical_form(_identity_defaulted(req, body)).manifest
    _check_identity(req, out, for_name)
    return out


def _identity_defaulted(req: Request, body: Body) -> Body:
    """A copy of ``body`` with a missing (or empty) apiVersion and kind taken from the URL."""
    out = copy.deepcopy(body)
    out["apiVersion"] = out.get("apiVersion") or req.path.api_version
    out["kind"] = out.get("kind") or req.info.kind
    return out


def _check_identity(req: Request, body: Body, for_name: str | None) -> None:
    if body.get("apiVersion") != req.info.api_version or body.get("kind") != req.info.kind:
        raise bad_request(
            f"the body is {body.get('apiVersion')}/{body.get('kind')} but the path serves "
            f"{req.info.api_version}/{req.info.kind}"
        )
    meta = body.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if req.path.namespace is not None:
        if meta.get("namespace") not in (None, "", req.path.namespace):
            raise bad_request(
                f"the namespace of the object ({meta['namespace']}) does not match the namespace on the "
                f"request ({req.path.namespace})"
            )
        meta["namespace"] = req.path.namespace
    elif req.info.namespaced:
        raise bad_request(f"{req.info.plural} are namespaced: use .../namespaces/NAMESPACE/{req.info.plural}")
    if for_name is not None and meta.get("name") not in (None, for_name):
        raise bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the URL")
    if for_name is not None:
        meta["name"] = for_name


def create_object(session: Any, req: Request) -> Body:
    body = checked_body(req, for_name=None)
    body.pop("status", None)
    _canonicalized(session, req, body)
    meta = body["metadata"]
    meta.pop("resourceVersion", None)
    _record_manager(session, req, None, body)
    return _create(session, req, body)


def _create(session: Any, req: Request, body: Body) -> Body:
    """Insert ``body``; a taken name (the table's unique key) is Kubernetes' 409 AlreadyExists."""
    try:
        return repository(session, req.info).create(body)
    except AlreadyExists as exc:
        name = body["metadata"].get("name")
        raise StatusError(
            409, "AlreadyExists", f'{req.info.resource} "{name}" already exists', req.info.resource, name
        ) from exc


def replace_object(session: Any, req: Request, current: Read | None = None) -> tuple[Body, bool]:
    """Create-or-replace; returns the object and whether it was created. ``current``: the object as this
    unit of work already read it (None: read it here, after the body passed validation)."""
    name = req.path.name or ""
    body = checked_body(req, for_name=name)
    body.pop("status", None)
    _canonicalized(session, req, body)
    repo = repository(session, req.info)
    row = (current or read(session, req)).row
    _record_manager(session, req, None if row is None else join(row), body)
    if row is None:
        # A concurrent create can take the name after the read: the same 409 a POST gets, not a 500.
        body["metadata"].pop("resourceVersion", None)
        return _create(session, req, body), True
    try:
        return repo.replace(body, current=row), False
    except Conflict as exc:
        raise _conflict(req, name) from exc


def _canonicalized(session: Any, req: Request, body: Body) -> None:
    """What the API server fills in on a write of some kinds (Karmada's registry strategies): a Cluster's
    NoExecute taints get their ``timeAdded``."""
    if req.info.kind == "Cluster" and req.info.group == "cluster.karmada.io":
        stamp_no_execute_taints(body, format_timestamp(repository(session, req.info).clock()))


def _record_manager(session: Any, req: Request, old: Body | None, body: Body) -> None:
    if req.manager is None:
        return
    now = format_timestamp(repository(session, req.info).clock())
    managed = patching.record_update(old, body, req.manager, kinds.is_builtin_kind(req.info), now)
    if managed:
        body["metadata"]["managedFields"] = managed
    else:
        body["metadata"].pop("managedFields", None)


def replace_status(session: Any, req: Request, current: Read | None = None) -> Body:
    """Write the status only. ``current`` as for ``replace_object``."""
    name = req.path.name or ""
    if not isinstance(req.body, dict) or not isinstance(req.body.get("status", {}), dict):
        raise bad_request("the request body must be an object with a status object")
    meta = req.body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    expected = resource_version(meta.get("resourceVersion"), "metadata.resourceVersion")
    row = None if current is None else current.row
    if current is not None and row is None:
        raise not_found(req.info.resource, name)
    try:
        return repository(session, req.info).update_status(
            req.path.namespace, name, req.body.get("status") or {}, expected_rv=expected, current=row
        )
    except NotFound as exc:
        raise not_found(req.info.resource, name) from exc
    except Conflict as exc:
        raise _conflict(req, name) from exc


def delete_object(session: Any, req: Request) -> Body:
    name = req.path.name or ""
    try:
        repository(session, req.info).delete(req.path.namespace, name)
    except NotFound as exc:
        raise not_found(req.info.resource, name) from exc
    return success(req.info.plural, name)


def _conflict(req: Request, name: str) -> StatusError:
    return conflict(req.info.resource, name)
