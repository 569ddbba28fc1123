"""Tables that are not API objects: decision history, events, API tokens, leases, the key fingerprint.

Invariants:
- ``scheduling_decisions`` is append-only; rows are never updated.
- ``events`` has one row per (involved object, type, reason, message): ``dedup_key`` is the sha256 of
  those fields and is unique, so a repeat bumps ``count`` and ``last_timestamp`` in one upsert.
- ``api_tokens`` stores only the sha256 of a token; the plaintext exists once, in the creator's hands.
  ``expires_at`` NULL means the token does not expire.
- ``leases`` has one row per (kind, name); ``expires_at`` is precomputed (renew time + duration) so
  "is it expired" is a plain comparison on both backends.
- ``key_fingerprints`` holds one row per key purpose, written once at first start: a fingerprint (not the
  key) of the encryption key the database's secrets are written with, so a replica holding another key
  refuses to start.
- ``controller_checkpoints`` holds one row per change-feed controller: where its last committed pass left
  its feeds (``controllers.feed_checkpoint``), so a restart resumes there instead of re-reading every row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from federation.store.tables.base import NAME_LENGTH, Base
from federation.store.types import JSONRecord, JSONType, UTCDateTime


class SchedulingDecisionRow(Base):
    __tablename__ = "scheduling_decisions"
    __table_args__ = (
        # "latest / history for this binding": equality on uid, newest first.
        Index("ix_scheduling_decisions_binding_uid_created_at", "binding_uid", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    binding_uid: Mapped[str] = mapped_column(String(36))
    binding_kind: Mapped[str] = mapped_column(String(NAME_LENGTH))
    binding_namespace: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    binding_name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    binding_generation: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    result: Mapped[str] = mapped_column(String(64), index=True)
    message: Mapped[str] = mapped_column(Text, default="")
    clusters: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    # Tens of KB per decision at 100 clusters, never queried by content: stored as text (``JSONRecord``).
    explanation: Mapped[dict[str, Any]] = mapped_column(JSONRecord, default=dict)


class EventRow(Base):
    __tablename__ = "events"
    __table_args__ = (
        Index(
            "ix_events_involved",
            "involved_kind",
            "involved_namespace",
            "involved_name",
            "last_timestamp",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dedup_key: Mapped[str] = mapped_column(String(64), unique=True)
    involved_kind: Mapped[str] = mapped_column(String(NAME_LENGTH))
    involved_namespace: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    involved_name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    involved_uid: Mapped[str] = mapped_column(String(36), default="")
    type: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(NAME_LENGTH))
    message: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(String(NAME_LENGTH), default="")
    count: Mapped[int] = mapped_column(Integer, default=1)
    first_timestamp: Mapped[datetime] = mapped_column(UTCDateTime())
    last_timestamp: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class ApiTokenRow(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    cluster_name: Mapped[str | None] = mapped_column(String(NAME_LENGTH), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class LeaseRow(Base):
    __tablename__ = "leases"
    __table_args__ = (UniqueConstraint("kind", "name", name="uq_leases_kind_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    holder: Mapped[str | None] = mapped_column(String(NAME_LENGTH), nullable=True)
    acquired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    renew_time: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    duration_seconds: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    transitions: Mapped[int] = mapped_column(Integer, default=0)


class KeyFingerprintRow(Base):
    __tablename__ = "key_fingerprints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    purpose: Mapped[str] = mapped_column(String(64), unique=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ControllerCheckpointRow(Base):
    __tablename__ = "controller_checkpoints"

    name: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    # The federation version that wrote it: another version's checkpoint is not resumed from.
    code_version: Mapped[str] = mapped_column(String(64))
    state: Mapped[dict[str, Any]] = mapped_column(JSONType)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
