"""Store fixtures: an engine with the schema on each backend, a unit of work, a fake clock, a SQL counter.

Sessions carry an encryption key, as every session of a running process does (Secret data is sealed).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, make_engine, session_factory
from federation.store.tables import metadata

from .support import FakeClock


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """The schema via create_all (fast); the migration tests prove Alembic builds the same one."""
    engine = make_engine(database_url)
    metadata.create_all(engine)
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
def secret_box() -> SecretBox:
    return SecretBox(generate_key())


@pytest.fixture
def uow(engine: Engine, secret_box: SecretBox) -> UnitOfWork:
    return UnitOfWork.for_engine(engine, secret_box)


@pytest.fixture
def session(engine: Engine, secret_box: SecretBox) -> Iterator[Session]:
    session = session_factory(engine, secret_box)()
    try:
        yield session
    finally:
        session.rollback()
        session.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
