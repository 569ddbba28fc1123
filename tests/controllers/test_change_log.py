"""The change-log pruner keeps the log to its window, in batches, on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from federation.controllers.change_log import ChangeLogPruner
from federation.controllers.runtime import FakeClock
from federation.store import changefeed, objects
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, make_engine
from federation.store.tables import ChangeLogRow, metadata, table_of

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def uow(database_url: str) -> Iterator[UnitOfWork]:
    engine = make_engine(database_url)
    metadata.create_all(engine)
    yield UnitOfWork.for_engine(engine, SecretBox(generate_key()))
    engine.dispose()


def write(uow: UnitOfWork, name: str, at: datetime) -> int:
    log = table_of(ChangeLogRow)
    with uow() as session:
        created = objects(session, "v1", "ConfigMap").create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}
        )
        revision = int(created["metadata"]["resourceVersion"])
        session.execute(update(log).where(log.c.revision == revision).values(created_at=at))
    return revision


def test_rows_older_than_the_window_go_in_batches(uow: UnitOfWork) -> None:
    old = [write(uow, f"old{i}", T0) for i in range(5)]
    kept = write(uow, "new", T0 + timedelta(minutes=9))
    pruner = ChangeLogPruner(uow, FakeClock(T0 + timedelta(minutes=10)), window_seconds=300, batch=2)
    assert pruner.interval_seconds == 60  # at most a minute, and at least four passes per window
    assert pruner.reconcile().processed == 5
    with uow() as session:
        assert list(session.scalars(select(ChangeLogRow.revision))) == [kept]
        assert changefeed.oldest_watchable(session) == kept - 1 > old[-1] - 1
    assert pruner.reconcile().processed == 0
    assert ChangeLogPruner(uow, FakeClock(), window_seconds=20).interval_seconds == 5
