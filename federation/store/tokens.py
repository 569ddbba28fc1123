"""API bearer tokens, stored as sha256 hashes only, and the API server's cache of valid ones.

Invariants:
- The plaintext is returned once by ``create`` and never stored; lookups hash the presented token.
  (A fast hash is right here: tokens are 256-bit random strings, not guessable passwords.)
- An ``agent`` token is bound to exactly one cluster; other roles to none.
- ``last_used_at`` is refreshed at most once a minute, so authenticating is not a write per request.
- A token with ``expires_at`` at or before now does not authenticate; a revoked token is deleted, so it
  does not either.

``TokenCache`` (one per API server process) remembers a token that authenticated, by its hash, for
``ttl`` (``api.token_cache_seconds``), so a request does not look its token up in the database every time:
- Expiry stays exact: every hit checks ``expires_at`` against the clock.
- A revocation committed by this process (``TokenRepository.delete`` in any session) evicts the token from
  every cache of the process at its commit, and a lookup that read the token before that commit does not
  put it back: the next request is refused. A revocation committed by another process (``federation
  token revoke`` runs in its own, and each ``serve`` replica has its own cache) takes effect at the latest
  ``ttl`` after its commit, the trade-off kube-apiserver makes for its token cache. ``ttl`` 0 turns the
  cache off: every request looks its token up again.
- Only successes are cached: an unknown, expired or revoked token is looked up (and refused) every time,
  so a token created a moment ago works at once and guessed tokens cannot fill the cache, which is bounded
  (``max_entries``) anyway.
- ``last_used_at`` is refreshed by the lookups the cache lets through (at least one per ``ttl`` of a token
  in use), so it stays within a minute and ``ttl`` of the last use.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, event, func, select
from sqlalchemy.orm import Session

from federation.store.errors import AlreadyExists, NotFound
from federation.store.repository import Clock
from federation.store.tables import ApiTokenRow
from federation.store.types import utcnow

ROLES = frozenset({"admin", "viewer", "agent"})
TOKEN_PREFIX = "fed_"
TOUCH_INTERVAL = timedelta(minutes=1)
# Tokens a cache holds at most (valid tokens only; a deployment has a handful, one per agent and user).
CACHE_MAX_ENTRIES = 1024


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
        """Revoke: the token stops authenticating when this commits (its hash is gone; the caches of this
        process forget it then, those of other processes within their ``ttl``)."""
        result = self.session.execute(delete(ApiTokenRow).where(ApiTokenRow.name == name))
        if not result.rowcount:  # type: ignore[attr-defined]
            raise NotFound("Token", "", name)
        event.listen(self.session, "after_commit", lambda _session: forget_revoked(name), once=True)


# -- the API server's cache ------------------------------------------------------------------------------

_CACHES: weakref.WeakSet[TokenCache] = weakref.WeakSet()
_CACHES_LOCK = threading.Lock()


def forget_revoked(name: str) -> None:
    """Every cache of this process forgets the token ``name`` (it was revoked)."""
    with _CACHES_LOCK:
        caches = list(_CACHES)
    for cache in caches:
        cache.forget(name)


@dataclass(frozen=True, slots=True)
class _Entry:
    token: Token
    looked_up_at: datetime


class TokenCache:
    """Tokens that authenticated, by hash, for ``ttl`` (see the module docstring). Thread-safe."""

    def __init__(
        self, ttl: timedelta, *, clock: Clock = utcnow, max_entries: int = CACHE_MAX_ENTRIES
    ) -> None:
        if ttl < timedelta(0):
            raise ValueError("a token cache's time to live must not be negative")
        self._ttl = ttl
        self._clock = clock
        self._max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._revocations = 0  # bumped by ``forget``: a lookup that began before must not cache
        with _CACHES_LOCK:
            _CACHES.add(self)

    def authenticate(self, plaintext: str, look_up: Callable[[str], Token | None]) -> Token | None:
        """The token's record, from the cache while it is fresh, else from ``look_up(plaintext)`` (the
        database: ``TokenRepository.authenticate``); None when it is unknown, expired or revoked."""
        key = hash_token(plaintext)
        token, revocations = self._cached(key)
        if token is not None:
            return token
        found = look_up(plaintext)
        if found is not None and self._ttl > timedelta(0):
            self._remember(key, found, self._clock(), revocations)
        return found

    def cached(self, plaintext: str) -> Token | None:
        """The token's record while the cache holds it fresh and unexpired; None otherwise (then only
        ``authenticate`` knows). Never touches the database: the API answers a hit on its event loop."""
        return self._cached(hash_token(plaintext))[0]

    def _cached(self, key: str) -> tuple[Token | None, int]:
        """The fresh entry's token (a stale or expired one is dropped), and the revocation count a lookup
        that follows a miss must still see when it caches what it read."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                if self._fresh(entry, now) and not entry.token.expired(now):
                    return entry.token, self._revocations
                del self._entries[key]  # stale or expired: the database says what it is now
            return None, self._revocations

    @property
    def clock(self) -> Clock:
        """The cache's clock; lookups through it check expiry by the same one."""
        return self._clock

    def forget(self, name: str) -> None:
        """Drop the token ``name`` (revoked); a lookup under way does not cache what it read."""
        with self._lock:
            self._revocations += 1
            for key in [k for k, entry in self._entries.items() if entry.token.name == name]:
                del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)

    def _fresh(self, entry: _Entry, now: datetime) -> bool:
        # A clock that went back makes an entry stale, never fresh for longer than ``ttl``.
        return entry.looked_up_at <= now < entry.looked_up_at + self._ttl

    def _remember(self, key: str, token: Token, now: datetime, revocations: int) -> None:
        with self._lock:
            if revocations != self._revocations:
                return  # a token was revoked while this one was looked up: it may have been this one
            if key not in self._entries and len(self._entries) >= self._max_entries:
                self._evict(now)
            self._entries[key] = _Entry(token, now)

    def _evict(self, now: datetime) -> None:
        """Make room: drop stale entries, and the oldest one if none is."""
        stale = [key for key, entry in self._entries.items() if not self._fresh(entry, now)]
        for key in stale:
            del self._entries[key]
        if len(self._entries) >= self._max_entries:
            del self._entries[next(iter(self._entries))]
