"""Engines, sessions and the unit of work.

Invariants:
- SQLite runs in WAL mode with foreign keys enforced and a busy timeout, so concurrent writers wait for
  each other instead of failing, and ON DELETE CASCADE / SET NULL behave as on Postgres.
- Postgres always goes through psycopg 3 (``postgresql+psycopg://``), whatever the URL spelled.
- Repositories never commit; ``UnitOfWork`` is the only place a transaction ends: commit when the block
  succeeds, rollback when it raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 30_000
_POSTGRES_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg2://")


def normalize_url(url: str) -> str:
    """Route every Postgres URL through psycopg 3."""
    for prefix in _POSTGRES_PREFIXES:
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``sqlite:///path`` or ``postgresql+psycopg://...``, configured for the store."""
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database, **kwargs)
    return create_engine(url, pool_pre_ping=True, **kwargs)


def _sqlite_engine(url: str, database: str | None, **kwargs: Any) -> Engine:
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, pool_pre_ping=True, **kwargs)
    event.listen(engine, "connect", _configure_sqlite)
    return engine


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        # WAL + NORMAL is durable across application crashes; only an OS crash may lose the last commit.
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions whose objects stay readable after commit (callers return values out of a unit of work)."""
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=True)


class UnitOfWork:
    """``with uow() as session:`` — one transaction; commits on success, rolls back on any exception."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self._factory = factory

    @classmethod
    def for_engine(cls, engine: Engine) -> UnitOfWork:
        return cls(session_factory(engine))

    @contextmanager
    def __call__(self) -> Iterator[Session]:
        session = self._factory()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()


def ping(engine: Engine) -> bool:
    """True when the database answers a trivial query (for ``/readyz``)."""
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except SQLAlchemyError:
        return False
    return True
