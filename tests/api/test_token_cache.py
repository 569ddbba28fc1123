"""The API's token cache (``store.tokens.TokenCache``) keeps every guarantee of a lookup per request, within
the bound it states: expiry exact, a revocation by this process at the next request, a revocation by another
process within ``api.token_cache_seconds``, refusals never cached. Its clock is a fake one: time passes only
when a test says so (no sleeps, no timed assertions)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, delete

from federation.api import app
from federation.api.context import ApiContext
from federation.cli import server
from federation.settings import load_settings
from federation.store.db import make_engine
from federation.store.tables import ApiTokenRow
from federation.store.tokens import Token, TokenCache, TokenRepository, forget_revoked
from tests.conftest import RunningServer
from tests.store.support import FakeClock, count_statements

TTL = timedelta(seconds=5)
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies/absent"
LOOKUP = "FROM api_tokens"


@dataclass
class Api:
    running: RunningServer
    context: ApiContext
    clock: FakeClock

    def token(self, name: str, role: str = "viewer", ttl: timedelta | None = None) -> str:
        """A new token, its expiry counted on the cache's clock."""
        with self.context.uow() as session:
            _, plaintext = TokenRepository(session, clock=self.clock).create(name, role, ttl=ttl)
        return plaintext

    def call(self, token: str) -> tuple[int, int]:
        """(status code of a GET, how many times it looked a token up in the database)."""
        with count_statements(self.context.engine) as log, self.running.client(token) as http:
            code = http.get(POLICIES).status_code
        return code, sum(LOOKUP in statement for statement in log.statements)


def start(tmp_path: Path, **api_settings: object) -> tuple[RunningServer, ApiContext]:
    settings = load_settings(data_dir=str(tmp_path / "data"), api={"port": 0, **api_settings})
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    assert process.api_context is not None
    return RunningServer(process), process.api_context


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    running, context = start(tmp_path)
    clock = FakeClock(datetime.now(UTC))
    context.tokens = TokenCache(TTL, clock=clock)
    try:
        yield Api(running, context, clock)
    finally:
        running.process.stop()


def other_process_engine(api: Api) -> Engine:
    """An engine of its own on the same database: what `federation token revoke` in another process uses
    (its sessions know nothing of this process's caches)."""
    return make_engine(api.running.process.settings.resolved_database_url())


# -- over HTTP ---------------------------------------------------------------------------------------------


def test_a_valid_token_is_looked_up_once_per_ttl(api: Api) -> None:
    viewer = api.token("viewer")
    assert api.call(viewer) == (404, 1)  # authenticated (the object is absent), from the database
    assert api.call(viewer) == (404, 0)
    api.clock.advance(TTL.total_seconds() - 0.001)
    assert api.call(viewer) == (404, 0)
    api.clock.advance(0.001)
    assert api.call(viewer) == (404, 1)  # ttl after its lookup: looked up again
    assert api.call(viewer) == (404, 0)


def test_a_revocation_by_this_process_applies_at_the_next_request(api: Api) -> None:
    viewer = api.token("viewer")
    assert api.call(viewer) == (404, 1)
    assert api.call(viewer) == (404, 0)  # cached
    with api.context.uow() as session:
        TokenRepository(session).delete("viewer")
    assert api.call(viewer) == (401, 1)  # no time passed: the commit evicted it


def test_a_revocation_by_another_process_applies_within_the_ttl(api: Api) -> None:
    viewer = api.token("viewer")
    assert api.call(viewer) == (404, 1)
    elsewhere = other_process_engine(api)
    try:
        with elsewhere.begin() as connection:
            connection.execute(delete(ApiTokenRow).where(ApiTokenRow.name == "viewer"))
    finally:
        elsewhere.dispose()
    api.clock.advance(TTL.total_seconds() - 0.001)
    assert api.call(viewer) == (404, 0)  # the stated window: still the cached answer
    api.clock.advance(0.001)
    assert api.call(viewer) == (401, 1)  # at the bound, refused


def test_expiry_is_checked_on_every_request_even_from_the_cache(api: Api) -> None:
    api.context.tokens = TokenCache(timedelta(hours=1), clock=api.clock)  # entries outlive the token
    brief = api.token("brief", ttl=timedelta(minutes=1))
    assert api.call(brief) == (404, 1)
    api.clock.advance(59)
    assert api.call(brief) == (404, 0)
    api.clock.advance(1)
    assert api.call(brief) == (401, 1)  # at expires_at, however fresh the entry (the database agrees)


def test_refusals_are_never_cached(api: Api) -> None:
    unknown = "fed_nobody-was-given-this-token"
    assert api.call(unknown) == (401, 1)
    assert api.call(unknown) == (401, 1)  # looked up again: a refusal is not remembered
    assert len(api.context.tokens) == 0


def test_zero_ttl_looks_every_token_up(tmp_path: Path) -> None:
    running, context = start(tmp_path, token_cache_seconds=0)
    try:
        api = Api(running, context, FakeClock(datetime.now(UTC)))
        viewer = api.token("viewer")
        assert [api.call(viewer) for _ in range(3)] == [(404, 1)] * 3
        assert len(context.tokens) == 0
    finally:
        running.process.stop()


# -- the cache alone ---------------------------------------------------------------------------------------


def token(name: str, expires_at: datetime | None = None) -> Token:
    return Token(name, "viewer", None, datetime(2025, 1, 1, tzinfo=UTC), None, expires_at)


def counting(found: Token | None) -> tuple[list[str], Callable[[str], Token | None]]:
    """A lookup that answers ``found``, and the tokens it was asked for."""
    calls: list[str] = []

    def look_up(plaintext: str) -> Token | None:
        calls.append(plaintext)
        return found

    return calls, look_up


def test_a_lookup_that_overlaps_a_revocation_is_not_cached() -> None:
    """A lookup that read the token before the revocation committed must not put it back in the cache."""
    cache = TokenCache(TTL, clock=FakeClock())
    calls: list[str] = []

    def look_up_while_revoked(plaintext: str) -> Token | None:
        calls.append(plaintext)
        forget_revoked("ci")  # the revocation commits while this lookup is under way
        return token("ci")

    assert cache.authenticate("fed_a", look_up_while_revoked) is not None  # it read the row before
    assert len(cache) == 0
    cache.authenticate("fed_a", look_up_while_revoked)
    assert calls == ["fed_a", "fed_a"]


def test_a_revocation_forgets_only_that_token() -> None:
    cache = TokenCache(TTL, clock=FakeClock())
    cache.authenticate("fed_a", counting(token("a"))[1])
    cache.authenticate("fed_b", counting(token("b"))[1])
    forget_revoked("a")
    calls, look_up = counting(token("b"))
    assert cache.authenticate("fed_b", look_up) == token("b") and calls == []
    calls, look_up = counting(None)
    assert cache.authenticate("fed_a", look_up) is None and calls == ["fed_a"]


def test_a_clock_that_goes_back_makes_entries_stale() -> None:
    clock = FakeClock()
    cache = TokenCache(TTL, clock=clock)
    cache.authenticate("fed_a", counting(token("a"))[1])
    clock.advance(-1)
    calls, look_up = counting(token("a"))
    cache.authenticate("fed_a", look_up)
    assert calls == ["fed_a"]


def test_the_cache_is_bounded() -> None:
    clock = FakeClock()
    cache = TokenCache(TTL, clock=clock, max_entries=2)
    for name in ("a", "b", "c"):
        cache.authenticate(f"fed_{name}", counting(token(name))[1])
        clock.advance(1)
    assert len(cache) == 2
    calls, look_up = counting(token("a"))
    cache.authenticate("fed_a", look_up)  # the oldest made room
    assert calls == ["fed_a"]


def test_a_negative_ttl_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        TokenCache(timedelta(seconds=-1))


def test_a_cache_hit_is_answered_without_a_lookup_and_a_miss_says_so() -> None:
    """``cached``: what the event loop asks before handing a request to a worker thread for a lookup."""
    clock = FakeClock()
    cache = TokenCache(TTL, clock=clock)
    assert cache.cached("fed_a") is None  # never looked up: only ``authenticate`` can tell
    expires = clock() + TTL * 3
    cache.authenticate("fed_a", counting(token("a", expires_at=expires))[1])
    assert cache.cached("fed_a") == token("a", expires_at=expires)
    clock.advance(TTL.total_seconds())
    assert cache.cached("fed_a") is None  # stale: the database says what it is now
    cache.authenticate("fed_a", counting(token("a", expires_at=expires))[1])
    forget_revoked("a")
    assert cache.cached("fed_a") is None  # revoked by this process
    cache.authenticate("fed_a", counting(token("a", expires_at=expires))[1])
    clock.advance(TTL.total_seconds() * 2 - 1)
    cache.authenticate("fed_a", counting(token("a", expires_at=expires))[1])
    clock.advance(2)
    assert cache.cached("fed_a") is None  # expired, though looked up a second ago


def test_a_cached_token_spares_the_request_a_worker_thread(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event loop answers who is calling from the cache; only a miss reaches ``authenticate`` (a
    worker thread's call, which may read the database)."""
    plaintext = api.token("ci")
    calls: list[str] = []
    looked_up = app.authenticate

    def counted(ctx: ApiContext, request: Any) -> Any:
        calls.append(request.url.path)
        return looked_up(ctx, request)

    monkeypatch.setattr(app, "authenticate", counted)
    assert api.call(plaintext) == (404, 1)
    assert api.call(plaintext) == (404, 0)
    assert len(calls) == 1
