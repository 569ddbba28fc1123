"""Postgres connections are pinged before use only after sitting idle in the pool (``db.IDLE_PING_SECONDS``):
a connection that broke while idle is replaced without the unit of work noticing; one in steady use costs
no ping (a broken one fails its statement once, and the pool reconnects)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from federation.store import db


def _engine(database_url: str, monkeypatch: pytest.MonkeyPatch, idle_seconds: float) -> Engine:
    monkeypatch.setattr(db, "IDLE_PING_SECONDS", idle_seconds)
    return db.make_engine(database_url, pool_size=1, max_overflow=0)


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(engine: Engine, pid: int) -> None:
    other = db.make_engine(str(engine.url.render_as_string(hide_password=False)), poolclass=NullPool)
    try:
        with other.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            connection.commit()
    finally:
        other.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_an_idle_connection_that_broke_is_replaced_before_use(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(database_url, monkeypatch, idle_seconds=0.0)  # every checked-in connection is "idle"
    try:
        pid = _backend_pid(engine)
        _terminate(engine, pid)
        assert _backend_pid(engine) != pid  # the ping failed, the pool connected afresh: no error
    finally:
        engine.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_connection_in_steady_use_is_not_pinged(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine(database_url, monkeypatch, idle_seconds=3600.0)
    try:
        pid = _backend_pid(engine)
        _terminate(engine, pid)
        with pytest.raises(OperationalError):  # no ping: the statement meets the broken connection
            _backend_pid(engine)
        assert _backend_pid(engine) != pid  # the pool saw the disconnect and reconnects
    finally:
        engine.dispose()
