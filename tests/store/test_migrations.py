"""Alembic: upgrade from empty on both backends, and no drift between the models and the migrations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, text

from federation.store import UnitOfWork, make_engine, migrate, objects
from federation.store.errors import MigrationsNotFound
from federation.store.tables import metadata

from .factories import make_binding


def test_upgrade_from_empty_then_no_drift(database_url: str) -> None:
    assert migrate.current(database_url) is None
    migrate.upgrade(database_url)
    assert migrate.current(database_url) == migrate.head()
    assert migrate.drift(database_url) == []
    engine = make_engine(database_url)
    try:
        assert set(metadata.tables) <= set(inspect(engine).get_table_names())
        with UnitOfWork.for_engine(engine)() as session:  # the migrated schema works for the store
            objects(session, "work.karmada.io/v1alpha2", "ResourceBinding").create(
                make_binding(clusters=[{"name": "m1", "replicas": 1}])
            )
    finally:
        engine.dispose()


def test_upgrade_is_idempotent(database_url: str) -> None:
    migrate.upgrade(database_url)
    migrate.upgrade(database_url)
    assert migrate.current(database_url) == migrate.head()


def test_drift_is_detected(database_url: str) -> None:
    """The drift check is not vacuous: a table the migrations lack shows up."""
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE events")
    finally:
        engine.dispose()
    assert any(diff[0] == "add_table" for diff in migrate.drift(database_url))


def test_missing_migrations_directory_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "federation" / "__init__.py"
    fake.parent.mkdir()
    fake.touch()
    monkeypatch.setattr(migrate.federation, "__file__", str(fake))
    with pytest.raises(MigrationsNotFound, match="migrations"):
        migrate.upgrade("sqlite://")


def test_downgrade_to_base_and_back(database_url: str) -> None:
    migrate.upgrade(database_url)
    command.downgrade(migrate.alembic_config(database_url), "base")
    assert migrate.current(database_url) is None
    migrate.upgrade(database_url)
    assert migrate.drift(database_url) == []


def test_0007_marks_existing_bindings_with_application_failover(database_url: str) -> None:
    """Rows written before the column existed get it from their spec, once, on both backends."""
    import json

    from sqlalchemy import text

    migrate.upgrade(database_url, "0006")
    engine = make_engine(database_url)
    try:
        with engine.begin() as connection:
            for name, failover in (("with", {"application": {"decisionConditions": {}}}), ("without", None)):
                spec = {"resource": {"kind": "Deployment", "name": name}, "replicas": 1}
                if failover:
                    spec["failover"] = failover
                connection.execute(
                    text(
                        "INSERT INTO resource_bindings (uid, api_version, kind, namespace, name, resource_version,"
                        " generation, labels, annotations, metadata_extra, spec, extra, created_at, updated_at,"
                        " needs_scheduling, cluster_sensitive, dirty_seq, failures)"
                        " VALUES (:uid, 'work.karmada.io/v1alpha2', 'ResourceBinding', 'default', :name, 1, 1,"
                        " '{}', '{}', '{}', :spec, '{}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, FALSE, TRUE, 0, 0)"
                    ),
                    {"uid": f"uid-{name}", "name": name, "spec": json.dumps(spec)},
                )
        migrate.upgrade(database_url)
        with engine.connect() as connection:
            rows = dict(
                connection.execute(text("SELECT name, application_failover FROM resource_bindings")).all()
            )
        assert {k: bool(v) for k, v in rows.items()} == {"with": True, "without": False}
    finally:
        engine.dispose()


def test_0008_starts_the_global_revision_after_every_existing_resource_version(database_url: str) -> None:
    """Per-object versions written before 0008 stay valid preconditions: the first global revision is
    above all of them, and a watch can start from the revision the log begins at."""
    from sqlalchemy import text

    from federation.store import changefeed
    from federation.store.crypto import SecretBox, generate_key

    migrate.upgrade(database_url, "0007")
    engine = make_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE cluster_taint_policies SET resource_version = 41"))
        migrate.upgrade(database_url)
        assert migrate.drift(database_url) == []
        uow = UnitOfWork.for_engine(engine, SecretBox(generate_key()))
        with uow() as session:
            assert changefeed.oldest_watchable(session) == 41 == changefeed.start_position(session)
            created = objects(session, "work.karmada.io/v1alpha2", "ResourceBinding").create(make_binding())
            again = objects(session, "v1", "ConfigMap").create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
            )
        assert [created["metadata"]["resourceVersion"], again["metadata"]["resourceVersion"]] == ["42", "43"]
        with uow() as session:
            assert changefeed.start_position(session) == 43
    finally:
        engine.dispose()


def test_0012_compresses_the_large_json_columns_with_lz4_where_the_server_has_it(database_url: str) -> None:
    """On Postgres (this machine's server has lz4) the columns are set to lz4 and a value written afterwards
    is stored compressed with it; a downgrade sets them back to the server's default."""
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    try:
        if engine.dialect.name != "postgresql":
            return  # nothing to do on SQLite: the migration is a no-op there
        compression = text(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = 'scheduling_decisions'::regclass "
            "AND attname = 'explanation'"
        )
        with engine.begin() as connection:
            assert connection.execute(compression).scalar() == "l"
            connection.execute(
                text(
                    "INSERT INTO scheduling_decisions (binding_uid, binding_kind, binding_namespace, "
                    "binding_name, result, message, clusters, explanation, created_at) VALUES "
                    "('u', 'ResourceBinding', 'default', 'b', 'Success', '', '[]', :explanation, now())"
                ),
                {
                    "explanation": json.dumps(
                        {"clusters": {f"member{i:03d}": {"passed": True} for i in range(500)}}
                    )
                },
            )
            method = connection.execute(
                text("SELECT pg_column_compression(explanation) FROM scheduling_decisions")
            ).scalar()
        assert method == "lz4"
        command.downgrade(migrate.alembic_config(database_url), "0011")
        with engine.begin() as connection:
            assert connection.execute(compression).scalar() == ""
    finally:
        engine.dispose()
