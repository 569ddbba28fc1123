"""Tokens with a time to live stop authenticating when it runs out; revoked tokens at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from federation.store import TokenRepository

from .support import T0, FakeClock


def test_a_token_authenticates_until_its_expiry_and_not_at_it(session: Session, clock: FakeClock) -> None:
    tokens = TokenRepository(session, clock=clock)
    token, plaintext = tokens.create("ci", "viewer", ttl=timedelta(hours=1))
    assert token.expires_at == T0 + timedelta(hours=1)
    clock.advance(3599)
    assert tokens.authenticate(plaintext) is not None
    clock.advance(1)
    assert tokens.authenticate(plaintext) is None
    listed = tokens.list()
    assert [(t.name, t.expires_at) for t in listed] == [("ci", T0 + timedelta(hours=1))]
    assert listed[0].expired(clock())


def test_without_a_ttl_a_token_does_not_expire(session: Session, clock: FakeClock) -> None:
    tokens = TokenRepository(session, clock=clock)
    token, plaintext = tokens.create("admin", "admin")
    assert token.expires_at is None
    clock.advance(10 * 365 * 86400)
    assert tokens.authenticate(plaintext) is not None and not token.expired(clock())


@pytest.mark.parametrize("ttl", [timedelta(0), timedelta(seconds=-5)])
def test_a_ttl_must_be_positive(session: Session, ttl: timedelta) -> None:
    with pytest.raises(ValueError, match="positive"):
        TokenRepository(session).create("x", "viewer", ttl=ttl)


def test_a_revoked_token_stops_authenticating(session: Session) -> None:
    tokens = TokenRepository(session)
    _, plaintext = tokens.create("agent-m1", "agent", "m1", ttl=timedelta(days=7))
    assert tokens.authenticate(plaintext) is not None
    tokens.delete("agent-m1")
    assert tokens.authenticate(plaintext) is None
    assert tokens.list() == []
