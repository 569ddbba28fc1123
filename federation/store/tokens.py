"""API bearer tokens, stored as sha256 hashes only.

Invariants:
- The plaintext is returned once by ``create`` and never stored; lookups hash the presented token.
  (A fast hash is right here: tokens are 256-bit random strings, not guessable passwords.)
- An ``agent`` token is bound to exactly one cluster; other roles to none.
- ``last_used_at`` is refreshed at most once a minute, so authenticating is not a write per request.
- A token with ``expires_at`` at or before now does not authenticate; a revoked token is deleted, so it
  does not either. Both take effect on the next request: every request looks its token up.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from federation.store.errors import AlreadyExists, NotFound
from federation.store.repository import Clock
from federation.store.tables import ApiTokenRow
from federation.store.types import utcnow

ROLES = frozenset({"admin", "viewer", "agent"})
TOKEN_PREFIX = "fed_"
TOUCH_INTERVAL = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Token:
    name: str
    role: str
    cluster_name: str | None
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None = None

    @classmethod
    def from_row(cls, row: ApiTokenRow) -> Token:
        return cls(row.name, row.role, row.cluster_name, row.created_at, row.last_used_at, row.expires_at)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def hash_token(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def _check_role(role: str, cluster_name: str | None) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}, not {role!r}")
    if (role == "agent") != bool(cluster_name):
        raise ValueError("an agent token needs a cluster, and only agent tokens may have one")


class TokenRepository:
    def __init__(self, session: Session, *, clock: Clock = utcnow) -> None:
        self.session = session
        self._clock = clock

    def create(
        self, name: str, role: str, cluster_name: str | None = None, *, ttl: timedelta | None = None
    ) -> tuple[Token, str]:
        """A new token and its plaintext (shown once; only its hash is kept); it expires after ``ttl``."""
        _check_role(role, cluster_name)
        if ttl is not None and ttl <= timedelta(0):
            raise ValueError("a token's time to live must be positive")
        if self.session.scalar(select(ApiTokenRow.id).where(ApiTokenRow.name == name)) is not None:
            raise AlreadyExists("Token", "", name)
        plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
        now = self._clock()
        row = ApiTokenRow(
            name=name,
            token_hash=hash_token(plaintext),
            role=role,
            cluster_name=cluster_name,
            created_at=now,
            expires_at=None if ttl is None else now + ttl,
        )
        self.session.add(row)
        self.session.flush()
        return Token.from_row(row), plaintext

    def authenticate(self, plaintext: str) -> Token | None:
        row = self.session.scalars(
            select(ApiTokenRow).where(ApiTokenRow.token_hash == hash_token(plaintext))
        ).one_or_none()
        now = self._clock()
        if row is None or Token.from_row(row).expired(now):
            return None
        if row.last_used_at is None or now - row.last_used_at >= TOUCH_INTERVAL:
            row.last_used_at = now
            self.session.flush()
        return Token.from_row(row)

    def list(self) -> list[Token]:
        rows = self.session.scalars(select(ApiTokenRow).order_by(ApiTokenRow.name))
        return [Token.from_row(row) for row in rows]

    def any(self) -> bool:
        """Whether any token exists (first start creates an admin token when none does)."""
        return bool(self.session.scalar(select(func.count()).select_from(ApiTokenRow)))

    def delete(self, name: str) -> None:
        """Revoke: the token stops authenticating at once (its hash is gone)."""
        result = self.session.execute(delete(ApiTokenRow).where(ApiTokenRow.name == name))
        if not result.rowcount:  # type: ignore[attr-defined]
            raise NotFound("Token", "", name)
