"""What every route of the API needs, handed in by whoever runs the server, and who is calling.

Its own module so the app factory and the feature modules it registers (join, agent, plan, ...) both
import it without importing each other: `app` imports `extensions`, which imports the feature modules,
which import this.

Who is calling: the Bearer token, looked up in the database unless the process's ``TokenCache`` holds it
(``api.token_cache_seconds``; expiry is checked on every request, revocation bounds in ``store.tokens``).
Only a lookup that reached the database tells the outage tracker the database answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from fastapi import Request
from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from federation.api.auth import Principal
from federation.api.outage import DatabaseOutage
from federation.api.status import unauthorized
from federation.settings import Settings
from federation.store.crypto import SecretBox
from federation.store.db import UnitOfWork
from federation.store.tokens import Token, TokenCache, TokenRepository

Notify = Callable[[str], None]


@dataclass(slots=True)
class ApiContext:
    """What the routes need, handed in by whoever runs the server."""

    settings: Settings
    engine: Engine
    uow: UnitOfWork
    secret_box: SecretBox
    notify: Notify = field(default=lambda kind: None)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    outage: DatabaseOutage = field(default_factory=DatabaseOutage)
    # True once the server is shutting down: open watches end, so a graceful stop does not wait on them.
    stopping: Callable[[], bool] = field(default=lambda: False)
    # The tokens that authenticated lately (``settings.api.token_cache_seconds``).
    tokens: TokenCache = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = TokenCache(timedelta(seconds=self.settings.api.token_cache_seconds))


def authenticate(ctx: ApiContext, request: Request) -> Principal:
    """Who is calling; may read the database (a worker thread's call, not the event loop's)."""
    found = ctx.tokens.authenticate(_bearer(request), lambda plaintext: _look_up(ctx, plaintext))
    if found is None:
        raise unauthorized("the token is not valid")
    return _principal(found)


def authenticate_cached(ctx: ApiContext, request: Request) -> Principal | None:
    """Who is calling when the token cache knows; None when only ``authenticate`` can tell. No I/O: the
    event loop calls it, sparing a request whose token is cached a hand-off to a worker thread."""
    found = ctx.tokens.cached(_bearer(request))
    return None if found is None else _principal(found)


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized("a Bearer token is required (Authorization: Bearer <token>)")
    return token.strip()


def _principal(token: Token) -> Principal:
    return Principal(name=token.name, role=token.role, cluster=token.cluster_name)


def _look_up(ctx: ApiContext, plaintext: str) -> Token | None:
    with ctx.uow() as session:
        found = TokenRepository(session, clock=ctx.tokens.clock).authenticate(plaintext)
    ctx.outage.recovered()  # a round trip that succeeded: the first one ends an outage
    return found
