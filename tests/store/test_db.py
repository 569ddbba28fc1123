"""Engines, the unit of work, ping."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from federation.database_urls import normalize_url
from federation.store import UnitOfWork, make_engine, objects, ping

from .factories import make_deployment


def test_sqlite_engine_creates_directory_and_sets_pragmas(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'a' / 'b' / 'f.db'}")
    try:
        with engine.connect() as connection:
            assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
            assert connection.execute(text("PRAGMA busy_timeout")).scalar() == 30000
        assert (tmp_path / "a" / "b" / "f.db").exists()
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgres://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("sqlite:///x.db", "sqlite:///x.db"),
    ],
)
def test_postgres_urls_use_psycopg3(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_ping(engine: Engine) -> None:
    assert ping(engine)
    assert not ping(
        make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none", connect_args={"connect_timeout": 1})
    )


def test_unit_of_work_commits_on_success_and_rolls_back_on_error(uow: UnitOfWork) -> None:
    with uow() as session:
        objects(session, "apps/v1", "Deployment").create(make_deployment("kept"))
    with pytest.raises(RuntimeError), uow() as session:
        objects(session, "apps/v1", "Deployment").create(make_deployment("lost"))
        raise RuntimeError("boom")
    with uow() as session:
        names = [d["metadata"]["name"] for d in objects(session, "apps/v1", "Deployment").list()[0]]
    assert names == ["kept"]


def test_a_sqlite_savepoint_waits_for_writers_instead_of_failing(tmp_path: Path) -> None:
    """A unit of work reads in a savepoint, another writer commits, then the first writes: on SQLite the
    savepoint began the transaction IMMEDIATE, so the other writer waited and nothing is "locked"."""
    from concurrent.futures import ThreadPoolExecutor, wait
    from threading import Event

    from federation.store.db import UnitOfWork as Uow

    engine = make_engine(f"sqlite:///{tmp_path / 'f.db'}")
    metadata_create_all(engine)
    uow = Uow.for_engine(engine)
    with uow() as session:
        objects(session, "apps/v1", "Deployment").create(make_deployment("first"))
    read, other_tried = Event(), Event()

    def other_writer() -> None:
        read.wait(10)
        other_tried.set()
        with uow() as session:
            objects(session, "apps/v1", "Deployment").create(make_deployment("second"))

    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(other_writer)
            with uow() as session, session.begin_nested():
                repo = objects(session, "apps/v1", "Deployment")
                assert repo.get("default", "first") is not None
                read.set()
                other_tried.wait(10)
                wait([waiting], timeout=1)  # with the fix it cannot commit before us; without, it does
                repo.create(make_deployment("third"))
            waiting.result(timeout=30)
        with uow() as session:
            names = {d["metadata"]["name"] for d in objects(session, "apps/v1", "Deployment").list()[0]}
        assert names == {"first", "second", "third"}
    finally:
        engine.dispose()


def metadata_create_all(engine: Engine) -> None:
    from federation.store.tables import metadata

    metadata.create_all(engine)
