"""Store fixtures: an engine with the schema on each backend, a unit of work, a fake clock, a SQL counter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

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
def uow(engine: Engine) -> UnitOfWork:
    return UnitOfWork.for_engine(engine)


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    session = session_factory(engine)()
    try:
        yield session
    finally:
        session.rollback()
        session.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
