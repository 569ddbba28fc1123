"""Secret data at rest: the `data` and `stringData` of core v1 Secrets are stored encrypted with the key
that encrypts member credentials (``SecretBox``, Fernet), transparently for every repository.

What is sealed: a Secret stored as a resource template (its top-level fields live in the ``extra`` column),
and every v1 Secret among a Work's ``spec.workload.manifests`` (the copy rendered for a member cluster);
the change log's copies of both the same way (``seal_manifest``).
Their `data` and `stringData` are replaced in the stored JSON by one field, ``SEALED_FIELD``: the Fernet
token of their canonical JSON. Everything else (`type`, `immutable`, metadata) stays queryable.

Invariants:
- In memory, Secret data is always plaintext: ORM attributes, and so every manifest ``join`` renders.
  Sealing happens inside the flush (``before_insert``/``before_update``), and right after the statement the
  attribute is set back to what a fresh load would give; loads and refreshes unseal. So comparisons see
  content, not ciphertext (Fernet tokens differ on every encryption): a no-op re-apply writes nothing
  and keeps its resourceVersion, and derived values (hashes, generations) follow the content.
- Only a changed attribute is re-sealed: a status write does not re-encrypt the data.
- Fail closed: a session made without a ``SecretBox`` (see ``db.session_factory``) refuses to write
  Secret data and cannot read sealed data; it never stores plaintext.
- A ``SEALED_FIELD`` the caller sent in a Secret is dropped on write: only the store writes that field.
- Rows written before sealing existed load as they are (plaintext) and are sealed by their next write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Mapper, QueryContext, Session, attributes, object_session
from sqlalchemy.orm.attributes import set_committed_value

from federation.store.crypto import SecretBox
from federation.store.errors import StoreError
from federation.store.tables import ObjectMixin, ResourceTemplateRow, WorkRow

SECRET_BOX = "federation.secret_box"  # the key of the SecretBox in ``Session.info``
SEALED_FIELD = "sealedData"
SEALED_FIELDS = ("data", "stringData")


class SealingError(StoreError):
    """Secret data cannot be written or read: the session has no encryption key."""


def is_secret(manifest: Mapping[str, Any]) -> bool:
    return manifest.get("apiVersion") == "v1" and manifest.get("kind") == "Secret"


def seal_body(body: Mapping[str, Any], box: SecretBox | None) -> dict[str, Any]:
    """A Secret's top-level fields with `data`/`stringData` replaced by their encrypted form."""
    sealed = {k: v for k, v in body.items() if k not in SEALED_FIELDS and k != SEALED_FIELD}
    secret = {k: body[k] for k in SEALED_FIELDS if k in body}
    if not secret:
        return sealed
    if box is None:
        raise SealingError("Secret data cannot be stored: this session has no encryption key")
    canonical = json.dumps(secret, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    sealed[SEALED_FIELD] = box.encrypt(canonical.encode()).decode("ascii")
    return sealed


def unseal_body(body: Mapping[str, Any], box: SecretBox | None) -> dict[str, Any]:
    """The inverse of ``seal_body`` (a body without the sealed field is returned as it is)."""
    token = body.get(SEALED_FIELD)
    plain = {k: v for k, v in body.items() if k != SEALED_FIELD}
    if not isinstance(token, str):
        return plain
    if box is None:
        raise SealingError("sealed Secret data cannot be read: this session has no encryption key")
    secret = json.loads(box.decrypt(token.encode("ascii")))
    return {**plain, **secret}


# -- what each table seals -------------------------------------------------------------------------------

Transform = Callable[[Mapping[str, Any], SecretBox | None], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Sealer:
    """Where a table keeps Secret data: one attribute, and how to (un)seal it."""

    attribute: str
    applies: Callable[[Any], bool]
    apply: Callable[[Any, SecretBox | None, Transform], Any]


def _template_applies(row: ResourceTemplateRow) -> bool:
    return row.api_version == "v1" and row.kind == "Secret"


def _template_apply(extra: Any, box: SecretBox | None, transform: Transform) -> Any:
    return transform(extra, box) if isinstance(extra, Mapping) else extra


def _work_apply(spec: Any, box: SecretBox | None, transform: Transform) -> Any:
    """The Work spec with every Secret manifest transformed (the rest shared, not copied)."""
    workload = spec.get("workload") if isinstance(spec, Mapping) else None
    if not isinstance(workload, Mapping):
        return spec
    manifests = workload.get("manifests")
    if not isinstance(manifests, list) or not any(_is_secret_manifest(m) for m in manifests):
        return spec
    changed = [transform(m, box) if _is_secret_manifest(m) else m for m in manifests]
    return {**spec, "workload": {**workload, "manifests": changed}}


def _is_secret_manifest(manifest: Any) -> bool:
    return isinstance(manifest, Mapping) and is_secret(manifest)


SEALERS: dict[type[ObjectMixin], Sealer] = {
    ResourceTemplateRow: Sealer("extra", _template_applies, _template_apply),
    WorkRow: Sealer("spec", lambda _row: True, _work_apply),
}


def unseal_work_spec(spec: Any, box: SecretBox | None) -> Any:
    """A Work spec read as column values (no ORM load, so no load hook) with its Secret data unsealed."""
    return _work_apply(spec, box, unseal_body)


def seal_manifest(manifest: Mapping[str, Any], box: SecretBox | None) -> dict[str, Any]:
    """A whole manifest with its Secret data sealed as its table seals it (what the change log stores)."""
    return _transform_manifest(manifest, box, seal_body)


def unseal_manifest(manifest: Mapping[str, Any], box: SecretBox | None) -> dict[str, Any]:
    """The inverse of ``seal_manifest``."""
    return _transform_manifest(manifest, box, unseal_body)


def _transform_manifest(
    manifest: Mapping[str, Any], box: SecretBox | None, transform: Transform
) -> dict[str, Any]:
    if is_secret(manifest):  # a template's top-level fields are its manifest's
        return transform(manifest, box)
    if manifest.get("kind") == "Work" and str(manifest.get("apiVersion", "")).startswith("work.karmada.io/"):
        return {**manifest, "spec": _work_apply(manifest.get("spec"), box, transform)}
    return dict(manifest)


# -- the ORM hooks -----------------------------------------------------------------------------------------


def _box(session: Session | None) -> SecretBox | None:
    box = session.info.get(SECRET_BOX) if session is not None else None
    return box if isinstance(box, SecretBox) else None


def _seal_before_write(sealer: Sealer, row: Any, *, inserting: bool) -> None:
    if not sealer.applies(row):
        return
    if not inserting and not attributes.get_history(row, sealer.attribute).has_changes():
        return  # unchanged: the stored ciphertext stays (no re-encryption on status writes)
    value = getattr(row, sealer.attribute)
    setattr(row, sealer.attribute, sealer.apply(value, _box(object_session(row)), seal_body))


def _unseal_after_write(sealer: Sealer, row: Any) -> None:
    if sealer.applies(row):
        _unseal(sealer, row, _box(object_session(row)))


def _unseal(sealer: Sealer, row: Any, box: SecretBox | None) -> None:
    stored = row.__dict__.get(sealer.attribute)
    plain = sealer.apply(stored, box, unseal_body)
    if plain is not stored:
        set_committed_value(row, sealer.attribute, plain)


def _register(table: type[ObjectMixin], sealer: Sealer) -> None:
    def before_insert(_mapper: Mapper[Any], _connection: Any, row: Any) -> None:
        _seal_before_write(sealer, row, inserting=True)

    def before_update(_mapper: Mapper[Any], _connection: Any, row: Any) -> None:
        _seal_before_write(sealer, row, inserting=False)

    def after_write(_mapper: Mapper[Any], _connection: Any, row: Any) -> None:
        _unseal_after_write(sealer, row)

    def on_load(row: Any, context: QueryContext) -> None:
        if sealer.applies(row):
            _unseal(sealer, row, _box(context.session))

    def on_refresh(row: Any, context: QueryContext, attrs: Any) -> None:
        if (attrs is None or sealer.attribute in attrs) and sealer.applies(row):
            _unseal(sealer, row, _box(context.session))

    event.listen(table, "before_insert", before_insert)
    event.listen(table, "before_update", before_update)
    event.listen(table, "after_insert", after_write)
    event.listen(table, "after_update", after_write)
    event.listen(table, "load", on_load)
    event.listen(table, "refresh", on_refresh)


for _table, _sealer in SEALERS.items():
    _register(_table, _sealer)
