"""Engines, sessions and the unit of work.

Invariants:
- SQLite runs in WAL mode with foreign keys enforced and a busy timeout, so concurrent writers wait for
  each other instead of failing, and ON DELETE CASCADE / SET NULL behave as on Postgres.
- Postgres always goes through psycopg 3 (``postgresql+psycopg://``), whatever the URL spelled.
- Repositories never commit; ``UnitOfWork`` is the only place a transaction ends: commit when the block
  succeeds, rollback when it raises.
- Files are private: a directory the store creates is 0700, the SQLite file 0600 (created so before SQLite
  opens it, and tightened if an older version left it readable; SQLite gives its -wal/-shm files the
  database file's mode).
- A session made with a ``SecretBox`` carries it in ``session.info`` (see ``sealing``): Secret data is
  encrypted when written and decrypted when read, transparently for every repository.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from federation.store.crypto import SecretBox
from federation.store.sealing import SECRET_BOX

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
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
        _private_database_file(Path(database).expanduser())
    engine = create_engine(url, pool_pre_ping=True, **kwargs)
    event.listen(engine, "connect", _configure_sqlite)
    return engine


def private_directory(path: Path) -> None:
    """Make ``path`` (and missing parents) a directory only its owner can enter (0700 when created).

    An existing one that others may enter is tightened: it holds the database and the key.
    """
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    _tighten(path, PRIVATE_DIR_MODE)


def _private_database_file(path: Path) -> None:
    """Create the SQLite file 0600 before SQLite does (it would use 0644), and tighten old ones."""
    if not path.parent.exists():
        private_directory(path.parent)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE_MODE))
    for candidate in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)):
        if candidate.exists():
            _tighten(candidate, PRIVATE_FILE_MODE)


def _tighten(path: Path, allowed: int) -> None:
    """Drop every permission bit beyond ``allowed`` (never add one: exact whatever the umask was)."""
    current = stat.S_IMODE(path.stat().st_mode)
    if current & ~allowed:
        try:
            path.chmod(current & allowed)
        except OSError as exc:  # not ours to change (another owner): say so, the store still works
            log.warning("cannot make %s private (%s): %s", path, oct(allowed), exc.strerror)


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


def session_factory(engine: Engine, secret_box: SecretBox | None = None) -> sessionmaker[Session]:
    """Sessions whose objects stay readable after commit (callers return values out of a unit of work),
    carrying the key Secret data is sealed with (without one, writing Secret data is refused)."""
    info = {} if secret_box is None else {SECRET_BOX: secret_box}
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=True, info=info)


class UnitOfWork:
    """``with uow() as session:`` — one transaction; commits on success, rolls back on any exception."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self._factory = factory

    @classmethod
    def for_engine(cls, engine: Engine, secret_box: SecretBox | None = None) -> UnitOfWork:
        return cls(session_factory(engine, secret_box))

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
