"""Engines, sessions and the unit of work.

Invariants:
- SQLite runs in WAL mode with foreign keys enforced and a busy timeout, so concurrent writers wait for
  each other instead of failing, and ON DELETE CASCADE / SET NULL behave as on Postgres.
- A SQLite savepoint never opens a transaction by itself: the driver begins a (deferred) transaction only
  before DML, so a ``SAVEPOINT`` issued outside one would start a deferred transaction whose reads pin a
  snapshot, and its first write after another writer's commit fails at once with "database is locked"
  (SQLite cannot wait for a snapshot it already lost). Before such a savepoint the store begins
  ``IMMEDIATE`` instead, which waits its turn within the busy timeout. (Every controller isolates items
  in savepoints; under load this was the "database is locked" of issue 12.)
- Postgres sessions carry ``statement_timeout`` and ``lock_timeout`` and connections a ``connect_timeout``
  (``Timeouts``), so a stuck statement or an unreachable server fails the unit of work instead of hanging a
  controller or an API worker for good.
- Postgres always goes through psycopg 3 (``postgresql+psycopg://``), whatever the URL spelled. A pooled
  connection is pinged only when it sat idle (``IDLE_PING_SECONDS``), not before every transaction.
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
import math
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError, SQLAlchemyError
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

from federation import jsoncodec
from federation.database_urls import normalize_url
from federation.store.crypto import SecretBox
from federation.store.sealing import SECRET_BOX

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long the store waits on the database before the unit of work fails (0: no limit)."""

    connect_seconds: float = 10.0
    statement_seconds: float = 60.0
    lock_seconds: float = 10.0
    sqlite_busy_seconds: float = 30.0

    def postgres_connect_args(self) -> dict[str, Any]:
        options = (
            f"-c statement_timeout={_ms(self.statement_seconds)} -c lock_timeout={_ms(self.lock_seconds)}"
        )
        args: dict[str, Any] = {"options": options}
        if self.connect_seconds > 0:
            # libpq takes whole seconds, and treats 1 as 2: round up, never below 2.
            args["connect_timeout"] = max(2, math.ceil(self.connect_seconds))
        return args


# A migration may rewrite a large table: no statement limit, but still no endless wait for a lock.
MIGRATION_TIMEOUTS = Timeouts(statement_seconds=0)


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def make_engine(url: str, timeouts: Timeouts | None = None, **kwargs: Any) -> Engine:
    """An engine for ``sqlite:///path`` or ``postgresql+psycopg://...``, configured for the store."""
    url = normalize_url(url)
    parsed = make_url(url)
    timeouts = timeouts or Timeouts()
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database, timeouts, **kwargs)
    # The caller's connect_args win over ours (a test that wants a one-second connect timeout).
    kwargs["connect_args"] = {**timeouts.postgres_connect_args(), **kwargs.get("connect_args", {})}
    engine = create_engine(url, **_json_codec(kwargs))
    _ping_after_idle(engine, IDLE_PING_SECONDS)
    return engine


# A pooled connection idle this long is pinged before use (a server restart or a dropped link meanwhile);
# one in steady use is not: ``pool_pre_ping`` cost a round trip per transaction.
IDLE_PING_SECONDS = 2.0
_CHECKED_IN_AT = "federation.checked_in_at"


def _ping_after_idle(engine: Engine, idle_seconds: float) -> None:
    """SQLAlchemy's pessimistic disconnect handling, for connections that sat idle only: a failed ping
    raises ``DisconnectionError``, on which the pool drops the connection and checks out another. A
    connection that broke while in steady use fails its statement instead, and the pool, seeing a
    disconnect, replaces every connection it held (the unit of work fails; the next one reconnects)."""

    def checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKED_IN_AT] = time.monotonic()

    def checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get(_CHECKED_IN_AT)
        if since is None or time.monotonic() - since < idle_seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError(f"an idle pooled connection failed its ping: {exc}") from exc

    event.listen(engine, "checkin", checked_in)
    event.listen(engine, "checkout", checked_out)


def _json_codec(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The store's JSON codec (``jsoncodec``) unless the caller brings its own."""
    return {"json_serializer": jsoncodec.dumps, "json_deserializer": jsoncodec.loads, **kwargs}


def _sqlite_engine(url: str, database: str | None, timeouts: Timeouts, **kwargs: Any) -> Engine:
    if database and database != ":memory:" and not database.startswith("file:"):
        _private_database_file(Path(database).expanduser())
    engine = create_engine(url, **_json_codec(kwargs))  # a local file: no connection goes stale
    busy_ms = _ms(timeouts.sqlite_busy_seconds)
    event.listen(engine, "connect", lambda conn, record: _configure_sqlite(conn, busy_ms))
    event.listen(engine, "savepoint", _begin_before_savepoint)
    return engine


def autovacuum_off(engine: Engine) -> bool:
    """Whether the Postgres server runs without autovacuum (SQLite: never). Every queue flag, status and
    applied write leaves a dead row version, so without it the Works and bindings tables bloat (five dead
    versions per live row after one pass of 10,000 bindings) and never get planner statistics."""
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as connection:
        return str(connection.execute(text("SHOW autovacuum")).scalar()).lower() == "off"


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


def _configure_sqlite(dbapi_connection: Any, busy_ms: int) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        # WAL + NORMAL is durable across application crashes; only an OS crash may lose the last commit.
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _begin_before_savepoint(connection: Any, _name: str | None) -> None:
    if not connection.connection.dbapi_connection.in_transaction:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def session_factory(engine: Engine, secret_box: SecretBox | None = None) -> sessionmaker[Session]:
    """Sessions whose objects stay readable after commit (callers return values out of a unit of work),
    carrying the key Secret data is sealed with (without one, writing Secret data is refused)."""
    info = {} if secret_box is None else {SECRET_BOX: secret_box}
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=True, info=info)


Guard = Callable[[Session], None]
_WROTE = "federation.wrote"


class UnitOfWork:
    """``with uow() as session:`` — one transaction; commits on success, rolls back on any exception.

    A guarded unit of work (``guarded``) runs its guard inside the transaction just before the commit of
    any transaction that wrote (a flush, or any statement that is not a SELECT): the leader's fence. The
    guard raises to roll everything back, so a write and the check it depends on commit together or not
    at all. Read-only units of work skip it (an idle pass costs no extra statement).
    """

    def __init__(self, factory: sessionmaker[Session], guard: Guard | None = None) -> None:
        self._factory = factory
        self._guard = guard

    @classmethod
    def for_engine(cls, engine: Engine, secret_box: SecretBox | None = None) -> UnitOfWork:
        return cls(session_factory(engine, secret_box))

    def is_postgres(self) -> bool:
        bind = self._factory.kw.get("bind")
        return bind is not None and bind.dialect.name == "postgresql"

    def engine(self) -> Engine:
        """The engine its sessions run on (for a statement no transaction may hold: VACUUM)."""
        bind = self._factory.kw.get("bind")
        if not isinstance(bind, Engine):
            raise TypeError("this unit of work's sessions are bound to no engine")
        return bind

    def guarded(self, guard: Guard) -> UnitOfWork:
        """The same sessions, with ``guard`` checked in every transaction that writes."""
        return UnitOfWork(self._factory, guard)

    @contextmanager
    def __call__(self) -> Iterator[Session]:
        session = self._factory()
        if self._guard is not None:
            _track_writes(session)
        try:
            yield session
            if self._guard is not None:
                session.flush()
                if session.info.get(_WROTE):
                    self._guard(session)
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()


def _track_writes(session: Session) -> None:
    """Mark ``session`` once it writes: an ORM flush, or a statement run through it that is not a SELECT."""

    def flushed(flushing: Session, _context: Any) -> None:
        flushing.info[_WROTE] = True

    def executed(state: ORMExecuteState) -> None:
        if not state.is_select:
            state.session.info[_WROTE] = True

    event.listen(session, "after_flush", flushed)
    event.listen(session, "do_orm_execute", executed)


def ping(engine: Engine) -> bool:
    """True when the database answers a trivial query (for ``/readyz``)."""
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except SQLAlchemyError:
        return False
    return True
