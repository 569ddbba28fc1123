"""Self-maintenance of a Postgres store without autovacuum (``store.maintenance``,
``controllers.maintenance``), and the revision draw's plan on a change log never analyzed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from federation.controllers.assembly import ControllerDeps, build_reconcilers
from federation.controllers.maintenance import DatabaseMaintenance
from federation.controllers.members_access import MemberAccess
from federation.settings import load_settings
from federation.store import maintenance
from federation.store.changelog import _NEXTVAL
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, autovacuum_off, make_engine
from federation.store.maintenance import Due
from federation.store.tables import Base
from federation.store.types import utcnow
from tests.conftest import _reset_postgres

pytestmark = pytest.mark.postgres

SCRATCH = "maintenance_scratch"


@pytest.fixture
def pg_engine(postgres_server_url: str) -> Iterator[Engine]:
    _reset_postgres(postgres_server_url)
    engine = make_engine(postgres_server_url)
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"CREATE TABLE {SCRATCH} (id integer PRIMARY KEY)")
    try:
        yield engine
    finally:
        engine.dispose()


def _write(engine: Engine, statement: str) -> None:
    with engine.begin() as connection:
        connection.exec_driver_sql(statement)
        # The counters autovacuum reads reach the statistics at the end of the transaction, but at most
        # once a second per backend unless asked.
        connection.exec_driver_sql("SELECT pg_stat_force_next_flush()")


def _eventually(engine: Engine, expected: list[Due], tables: list[str]) -> list[Due]:
    """``due`` once the statistics show what the writes did (they arrive asynchronously)."""
    found: list[Due] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            found = maintenance.due(connection, tables, regardless_of_autovacuum=True)
        if found == expected:
            return found
        time.sleep(0.1)
    return found


def test_a_table_is_analyzed_vacuumed_and_left_alone_as_autovacuum_would(pg_engine: Engine) -> None:
    tables = [SCRATCH]
    assert _eventually(pg_engine, [], tables) == []  # empty: nothing to do
    _write(pg_engine, f"INSERT INTO {SCRATCH} SELECT generate_series(1, 10)")
    # Never analyzed and not empty: analyzed (10 inserts are far below the insert threshold of 1,000).
    assert _eventually(pg_engine, [Due(SCRATCH, vacuum=False)], tables) == [Due(SCRATCH, vacuum=False)]
    _write(pg_engine, f"INSERT INTO {SCRATCH} SELECT generate_series(11, 2000)")
    # 2,000 rows inserted since the last vacuum (none): over 1,000 + 0.2 x rows.
    assert _eventually(pg_engine, [Due(SCRATCH, vacuum=True)], tables) == [Due(SCRATCH, vacuum=True)]

    assert maintenance.run(pg_engine, [Due(SCRATCH, vacuum=True)]) == [Due(SCRATCH, vacuum=True)]
    assert _eventually(pg_engine, [], tables) == []
    _write(pg_engine, f"DELETE FROM {SCRATCH} WHERE id > 100")
    # 1,900 dead rows: over 50 + 0.2 x 2,000.
    assert _eventually(pg_engine, [Due(SCRATCH, vacuum=True)], tables) == [Due(SCRATCH, vacuum=True)]
    maintenance.run(pg_engine, [Due(SCRATCH, vacuum=True)])
    with pg_engine.connect() as connection:
        last = connection.execute(
            text("SELECT last_vacuum, last_analyze FROM pg_stat_user_tables WHERE relname = :name"),
            {"name": SCRATCH},
        ).one()
    assert last.last_vacuum is not None and last.last_analyze is not None
    assert _eventually(pg_engine, [], tables) == []


def test_a_failing_table_is_logged_and_the_others_done(
    pg_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    items = [Due("no_such_table", vacuum=False), Due(SCRATCH, vacuum=False)]
    assert maintenance.run(pg_engine, items) == [Due(SCRATCH, vacuum=False)]
    assert "no_such_table" in caplog.text
    with pg_engine.connect() as connection:  # the pooled connection got its statement timeout back
        assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "1min"


def test_the_store_tables_are_checked_and_the_check_follows_the_server_setting(pg_engine: Engine) -> None:
    _write(pg_engine, "INSERT INTO revision_counter (id, value) VALUES (1, 0)")
    expected = [Due("revision_counter", vacuum=False)]
    assert _eventually(pg_engine, expected, maintenance.store_tables()) == expected
    with pg_engine.connect() as connection:
        found = maintenance.due(connection)
    # With autovacuum on (the default), the server does it and nothing is due here.
    assert found == (expected if autovacuum_off(pg_engine) else [])


def test_the_reconciler_does_what_is_due(pg_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    uow = UnitOfWork.for_engine(pg_engine)
    done: list[list[Due]] = []
    monkeypatch.setattr(
        maintenance, "due", lambda connection: [Due(SCRATCH, vacuum=True)] if not done else []
    )
    real_run = maintenance.run
    monkeypatch.setattr(
        maintenance, "run", lambda engine, items: done.append(list(items)) or real_run(engine, items)
    )
    reconciler = DatabaseMaintenance(uow, interval_seconds=15)
    outcome = reconciler.reconcile()
    assert outcome.processed == 1 and not outcome.wrote  # wakes no controller
    assert reconciler.reconcile().processed == 0
    assert done == [[Due(SCRATCH, vacuum=True)]]  # the second pass ran nothing


def test_the_revision_draw_probes_the_log_by_its_key_even_without_statistics(pg_engine: Engine) -> None:
    """The draw's lock-taking lookup must not scan the log: on a server without autovacuum the log is
    never analyzed, and a range condition was planned as a scan of all of it (100 to 200 ms per write)."""
    with pg_engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO change_log (revision, event, api_version, kind, namespace, name, object, "
                "created_at) SELECT g, 'ADDED', 'v1', 'ConfigMap', 'default', 'cm' || g, '{}', :now "
                "FROM generate_series(1, 20000) AS g"
            ),
            {"now": utcnow()},
        )
    with pg_engine.begin() as connection:
        plan = "\n".join(connection.execute(text("EXPLAIN " + _NEXTVAL.text), {"count": 1}).scalars())
    assert "change_log" in plan and "Seq Scan" not in plan, plan


def _deps(url: str, tmp_path: Path, self_maintenance: bool) -> ControllerDeps:
    settings = load_settings(data_dir=str(tmp_path), database_url=url)
    settings.database.self_maintenance = self_maintenance
    uow = UnitOfWork.for_engine(make_engine(url))
    box = SecretBox(generate_key())
    return ControllerDeps(uow, settings, utcnow, "test", box, MemberAccess(uow, box, settings.members))


@pytest.mark.parametrize(
    ("backend", "enabled", "built"),
    [("postgres", True, True), ("postgres", False, False), ("sqlite", True, False)],
)
def test_only_a_postgres_store_with_it_enabled_gets_the_reconciler(
    postgres_server_url: str, tmp_path: Path, backend: str, enabled: bool, built: bool
) -> None:
    url = postgres_server_url if backend == "postgres" else f"sqlite:///{tmp_path / 'f.db'}"
    reconcilers = build_reconcilers(_deps(url, tmp_path, self_maintenance=enabled))
    maintaining = [r for r in reconcilers if isinstance(r, DatabaseMaintenance)]
    assert len(maintaining) == (1 if built else 0)
    assert all(r.interval_seconds == 15 for r in maintaining)
