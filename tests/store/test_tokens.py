"""API tokens: plaintext once, sha256 at rest, roles."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store import AlreadyExists, NotFound, TokenRepository
from federation.store.tables import ApiTokenRow

from .support import T0, FakeClock


def test_plaintext_is_never_stored(session: Session, clock: FakeClock) -> None:
    tokens = TokenRepository(session, clock=clock)
    token, plaintext = tokens.create("admin", "admin")
    row = session.scalars(select(ApiTokenRow)).one()
    assert row.token_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    stored = [str(value) for value in session.execute(select(ApiTokenRow.__table__)).one()]
    assert not any(plaintext in value for value in stored)
    assert token.role == "admin" and token.created_at == T0


def test_authenticate(session: Session, clock: FakeClock) -> None:
    tokens = TokenRepository(session, clock=clock)
    _, plaintext = tokens.create("agent-m1", "agent", cluster_name="member1")
    clock.advance(120)
    found = tokens.authenticate(plaintext)
    assert found is not None
    assert (found.name, found.role, found.cluster_name) == ("agent-m1", "agent", "member1")
    assert found.last_used_at == T0 + timedelta(seconds=120)
    assert tokens.authenticate(plaintext + "x") is None
    assert tokens.authenticate("") is None


def test_roles_and_cluster_binding_are_checked(session: Session) -> None:
    tokens = TokenRepository(session)
    with pytest.raises(ValueError, match="role"):
        tokens.create("x", "root")
    with pytest.raises(ValueError, match="cluster"):
        tokens.create("x", "agent")
    with pytest.raises(ValueError, match="cluster"):
        tokens.create("x", "viewer", cluster_name="member1")


def test_names_unique_list_delete(session: Session) -> None:
    tokens = TokenRepository(session)
    assert not tokens.any()
    tokens.create("b", "viewer")
    tokens.create("a", "admin")
    with pytest.raises(AlreadyExists):
        tokens.create("a", "admin")
    assert [t.name for t in tokens.list()] == ["a", "b"]
    tokens.delete("a")
    with pytest.raises(NotFound):
        tokens.delete("a")
    assert tokens.any()
