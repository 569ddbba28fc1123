"""The database remembers its encryption key's fingerprint; a process with another key refuses to start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, Text, cast, select

from federation.store import migrate
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import UnitOfWork, make_engine
from federation.store.keycheck import KeyMismatch, verify_key
from federation.store.tables import KeyFingerprintRow, table_of

from .factories import make_cluster

SOURCE = "the encryption key at /keys/secret.key"


def test_first_start_records_the_fingerprint_and_the_same_key_passes(engine: Engine) -> None:
    key = generate_key()
    uow = UnitOfWork.for_engine(engine)
    verify_key(uow, SecretBox(key), SOURCE)
    verify_key(uow, SecretBox(key), SOURCE)  # a restart, a second replica
    table = table_of(KeyFingerprintRow)
    with engine.connect() as connection:
        rows = list(connection.execute(select(table.c.purpose, cast(table.c.fingerprint, Text))))
    assert rows == [("secrets", SecretBox(key).fingerprint)]
    assert key.decode() not in rows[0][1]  # a fingerprint, not the key


def test_another_key_is_refused_with_a_clear_message(engine: Engine) -> None:
    uow = UnitOfWork.for_engine(engine)
    original, other = SecretBox(generate_key()), SecretBox(generate_key())
    verify_key(uow, original, SOURCE)
    with pytest.raises(KeyMismatch) as refused:
        verify_key(uow, other, SOURCE)
    message = str(refused.value)
    assert message.startswith(
        "the encryption key at /keys/secret.key does not match the key this database was written with "
        f"(fingerprint {original.fingerprint[:16]}, this key's {other.fingerprint[:16]})"
    )
    assert "\n" not in message


def test_a_database_from_before_fingerprints_is_checked_against_its_credentials(engine: Engine) -> None:
    """Upgrading with the wrong key must not record the wrong key as the database's."""
    written_with = SecretBox(generate_key())
    uow = UnitOfWork.for_engine(engine, written_with)
    with uow() as session:
        clusters = ClusterRepository(session)
        clusters.objects.create(make_cluster("m1"))
        clusters.set_kubeconfig("m1", {"clusters": []}, written_with)
    with pytest.raises(KeyMismatch, match="cannot decrypt the stored member credentials"):
        verify_key(uow, SecretBox(generate_key()), SOURCE)
    with engine.connect() as connection:
        assert connection.scalar(select(table_of(KeyFingerprintRow).c.id)) is None  # nothing recorded
    verify_key(uow, written_with, SOURCE)  # the right key is accepted, and recorded


def test_serve_with_another_key_exits_with_one_line(tmp_path: Path, database_url: str) -> None:
    data = tmp_path / "data"
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    try:
        verify_key(
            UnitOfWork.for_engine(engine), SecretBox(generate_key()), SOURCE
        )  # first written with this
    finally:
        engine.dispose()
    data.mkdir()
    (data / "secret.key").write_bytes(generate_key())
    env = {"FEDERATION_CLIENT_CONFIG": str(tmp_path / "client.yaml"), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "federation", "serve", "--port", "0", "--data-dir", str(data)]
    finished = subprocess.run(
        [*command, "--database-url", database_url], env=env, capture_output=True, text=True, timeout=60
    )
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "Traceback" not in finished.stderr
    line = finished.stderr.strip().splitlines()[-1]  # after serve's log lines (migrations ran)
    assert line.startswith(f"error: the encryption key at {data / 'secret.key'} does not match the key")
    assert "(fingerprint " in line
    assert not (data / "federation.kubeconfig").exists()  # it stopped before serving
