"""The database remembers which encryption key its secrets are written with, by fingerprint.

A replica started with another key than the database's would fail to decrypt every member's credentials
(every member NotReady) and every Secret. It refuses to start instead: ``verify_key`` raises ``KeyMismatch``.

Invariants:
- What is stored is ``SecretBox.fingerprint``: it identifies the key without revealing it.
- The first start records the fingerprint (one row per purpose; two replicas starting together insert
  once, the loser re-reads and compares). On a database that already holds encrypted member credentials
  (written before fingerprints existed), the key must decrypt one of them first, so a wrong key is not
  recorded as the right one.
"""

from __future__ import annotations

import hmac

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from federation.store.crypto import SecretBox
from federation.store.db import UnitOfWork
from federation.store.errors import DecryptionError, StoreError
from federation.store.repository import Clock
from federation.store.tables import ClusterRow, KeyFingerprintRow
from federation.store.types import utcnow

PURPOSE = "secrets"
SHOWN_LENGTH = 16  # hex characters shown in messages: enough to tell keys apart


class KeyMismatch(StoreError):
    """The configured encryption key is not the one the database was written with."""


def verify_key(uow: UnitOfWork, box: SecretBox, source: str, *, clock: Clock = utcnow) -> None:
    """Record the key's fingerprint on first start; raise ``KeyMismatch`` if the database has another.

    ``source`` says where the key came from ("the encryption key at PATH"), for the message.
    """
    mine = box.fingerprint
    stored = _stored(uow)
    if stored is None:
        _check_existing_credentials(uow, box, source)
        stored = _record(uow, mine, clock)
    if not hmac.compare_digest(stored, mine):
        raise KeyMismatch(
            f"{source} does not match the key this database was written with "
            f"(fingerprint {stored[:SHOWN_LENGTH]}, this key's {mine[:SHOWN_LENGTH]}); "
            "start it with the original key"
        )


def _stored(uow: UnitOfWork) -> str | None:
    with uow() as session:
        return session.scalar(
            select(KeyFingerprintRow.fingerprint).where(KeyFingerprintRow.purpose == PURPOSE)
        )


def _record(uow: UnitOfWork, mine: str, clock: Clock) -> str:
    """Insert our fingerprint; if another replica inserted first, theirs is the one to compare with."""
    try:
        with uow() as session:
            session.add(KeyFingerprintRow(purpose=PURPOSE, fingerprint=mine, created_at=clock()))
        return mine
    except IntegrityError:
        stored = _stored(uow)
        assert stored is not None  # the unique purpose was taken: the row exists
        return stored


def _check_existing_credentials(uow: UnitOfWork, box: SecretBox, source: str) -> None:
    with uow() as session:
        sample = session.scalar(
            select(ClusterRow.credentials).where(ClusterRow.credentials.is_not(None)).limit(1)
        )
    if sample is None:
        return
    try:
        box.decrypt(sample)
    except DecryptionError as exc:
        raise KeyMismatch(
            f"{source} does not match the key this database was written with "
            "(it cannot decrypt the stored member credentials); start it with the original key"
        ) from exc
