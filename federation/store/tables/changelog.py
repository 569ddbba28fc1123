"""The global revision and the change log behind watch.

Invariants:
- ``resource_version`` of every API object is one global, increasing sequence (etcd's revision): on
  Postgres the SEQUENCE ``resource_version_seq``, on SQLite the one row of ``revision_counter``, bumped in
  the writing transaction (SQLite runs one writer at a time, so its values are handed out in commit
  order and a rolled-back transaction gives its values back).
- ``change_log`` holds one row per revision an object write took, written in the same transaction as the
  write: the event (ADDED, MODIFIED, DELETED), the object as a GET at that revision returns it (Secret
  data sealed, as in the object tables), and for a MODIFIED whose labels changed the labels before, so a
  label-selected watch can say an object entered or left its selection.
- A revision absent from ``change_log`` is a write that rolled back (or one still in flight on Postgres;
  ``store.changefeed`` tells the two apart). Old rows are pruned by age, the newest row never.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, Sequence, String
from sqlalchemy.orm import Mapped, mapped_column

from federation.store.tables.base import NAME_LENGTH, Base, Revision
from federation.store.types import JSONRecord, JSONType, UTCDateTime

RESOURCE_VERSION_SEQUENCE = Sequence("resource_version_seq", metadata=Base.metadata)

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


class RevisionCounterRow(Base):
    """SQLite's revision counter (one row, ``id`` 1); Postgres uses ``resource_version_seq``."""

    __tablename__ = "revision_counter"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    value: Mapped[int] = mapped_column(Revision)


class ChangeLogRow(Base):
    __tablename__ = "change_log"
    __table_args__ = (
        # Pruning by age finds its cut-off revision through this index.
        Index("ix_change_log_created_at", "created_at"),
    )

    revision: Mapped[int] = mapped_column(Revision, primary_key=True, autoincrement=False)
    event: Mapped[str] = mapped_column(String(16))
    api_version: Mapped[str] = mapped_column(String(NAME_LENGTH))
    kind: Mapped[str] = mapped_column(String(NAME_LENGTH))
    namespace: Mapped[str] = mapped_column(String(NAME_LENGTH))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    # Written for every write of every object and only ever read whole: stored as text (``JSONRecord``).
    object: Mapped[dict[str, Any]] = mapped_column(JSONRecord)
    previous_labels: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
