"""Declarative base and the columns every API-object table shares.

Invariants:
- ``namespace`` is ``""`` (never NULL) for cluster-scoped objects, so ``UNIQUE(namespace, name)`` holds on
  both backends (NULLs are distinct in unique constraints).
- ``resource_version`` is the mapper's ``version_id_col``: every ORM UPDATE runs
  ``... WHERE id = :id AND resource_version = :seen``, so a concurrent writer that read the same version
  fails with ``StaleDataError`` (the repositories turn it into ``Conflict``). Its value is not a per-row
  counter but the next global revision, assigned by ``store.changelog`` when a write changes what a GET
  returns (``version_id_generator=False``: the mapper checks the version, the change log sets it).
- ``spec``/``status`` hold the manifest's sections verbatim; ``extra`` holds any other top-level fields
  (ConfigMap ``data``, Secret ``type``...), ``metadata_extra`` any metadata field without its own column
  (finalizers, ownerReferences...). Together they reproduce the manifest exactly.
- Claim columns (``ClaimMixin``) are controller bookkeeping, not API state: they are written with Core
  statements that never bump ``resource_version``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import BigInteger, Boolean, Integer, MetaData, String, Table
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

from federation.store.types import JSONType, UTCDateTime

# Deterministic constraint names: Alembic batch mode on SQLite and drift checks need them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

NAME_LENGTH = 253  # a Kubernetes DNS subdomain name

# A global revision: 64-bit, since one sequence across every kind outgrows 2**31 long before a per-object
# counter would. SQLite's INTEGER is already 64-bit (and an INTEGER PRIMARY KEY is the rowid).
Revision = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSONType,
        list[Any]: JSONType,
    }


class ObjectMixin:
    """Columns of every table that stores a Kubernetes-shaped API object."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(String(36), unique=True)
    api_version: Mapped[str] = mapped_column(String(NAME_LENGTH))
    kind: Mapped[str] = mapped_column(String(NAME_LENGTH))
    namespace: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    resource_version: Mapped[int] = mapped_column(Revision)
    generation: Mapped[int] = mapped_column(Integer, default=1)
    labels: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    annotations: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    metadata_extra: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    spec: Mapped[Any | None] = mapped_column(JSONType, nullable=True)
    status: Mapped[Any | None] = mapped_column(JSONType, nullable=True)
    extra: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    @declared_attr.directive
    def __mapper_args__(cls) -> dict[str, Any]:
        return {"version_id_col": cls.resource_version, "version_id_generator": False}


class ClaimMixin:
    """Work-queue columns: a dirty flag (named by ``dirty_flag``), a claim lease, and a retry time.

    ``dirty_seq`` counts how often the row was marked dirty; a worker that finishes clears the flag only
    if the count is still the one it claimed, so a change made while it worked is not lost. ``failures``
    counts consecutive failed attempts (see ``claims.fail``).
    """

    dirty_flag: ClassVar[str]

    claimed_by: Mapped[str | None] = mapped_column(String(NAME_LENGTH), nullable=True)
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    dirty_seq: Mapped[int] = mapped_column(Integer, default=0)
    # Consecutive failed attempts (reset by a success): the exponent of the retry back-off.
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


def bool_column(*, index: bool = False, nullable: bool = False, default: bool | None = None) -> Mapped[Any]:
    """A Boolean column without a CHECK constraint (none on either backend keeps batch migrations simple)."""
    return mapped_column(Boolean(create_constraint=False), index=index, nullable=nullable, default=default)


def table_of(model: type[Any]) -> Table:
    """The Core ``Table`` of a mapped class: for statements that bypass the ORM (no version bump)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table
