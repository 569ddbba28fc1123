"""Shared fixtures: a real Postgres database per test run, and the SQLite/Postgres backend matrix.

Postgres tests use the server named by FEDERATION_TEST_PG_URL (default: the local trust-auth server).
A fresh database is created for the run and dropped afterwards. When FEDERATION_TEST_REQUIRE_PG=1 (CI),
an unreachable server is a failure, not a skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_ADMIN_URL = os.environ.get("FEDERATION_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REQUIRE_PG = os.environ.get("FEDERATION_TEST_REQUIRE_PG") == "1"


def _admin_conninfo() -> str:
    return PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A database created for this test run on the Postgres server; yields its SQLAlchemy URL."""
    import psycopg

    name = f"federation_test_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(_admin_conninfo(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        if REQUIRE_PG:
            pytest.fail(f"Postgres is required (FEDERATION_TEST_REQUIRE_PG=1) but unreachable: {exc}")
        pytest.skip(f"Postgres unreachable: {exc}")
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(_admin_conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each backend; tests that take it run once per backend.

    Postgres gets a fresh schema-less database per test by dropping every table of the run's database
    (cheaper than CREATE DATABASE per test).
    """
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'federation.db'}"
    url: str = request.getfixturevalue("postgres_server_url")
    _reset_postgres(url)
    return url


def _reset_postgres(url: str) -> None:
    import psycopg

    conninfo = url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


class RunningServer:
    """A `federation serve` process running in a thread on 127.0.0.1, port 0, over HTTPS with its own CA
    (the kubeconfig it wrote carries the CA, the URL and the admin token)."""

    def __init__(self, process) -> None:
        self.process = process
        self.url: str = process.url
        self.admin_token: str = process.admin_token
        self.kubeconfig: Path = process.kubeconfig_file

    @property
    def verify(self):
        """httpx's ``verify`` for this server: its CA (plain HTTP: nothing to verify)."""
        from federation.apiclient import tls_verify

        return tls_verify(self.process.tls.ca_pem if self.process.tls else None)

    def client(self, token: str | None = None):
        import httpx

        headers = {"Authorization": f"Bearer {token or self.admin_token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, verify=self.verify)

    def create_token(self, role: str, cluster: str | None = None, name: str | None = None) -> str:
        from federation.store.tokens import TokenRepository

        with self.process.api_context.uow() as session:
            _, plaintext = TokenRepository(session).create(name or f"{role}-{cluster or 'x'}", role, cluster)
        return plaintext


def start_server(tmp_path: Path, database_url: str | None = None, **settings_overrides) -> RunningServer:
    from federation.cli import server
    from federation.settings import load_settings

    api = {"port": 0, **settings_overrides.pop("api", {})}
    settings = load_settings(
        data_dir=str(tmp_path / "data"), database_url=database_url, api=api, **settings_overrides
    )
    process = server.build(settings)
    process.start_in_thread()
    return RunningServer(process)


def point_cli_at(monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> None:
    """The CLI (and kubectl) read ``kubeconfig`` and nothing else: no server or token from the environment."""
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    for name in ("FEDERATION_SERVER", "FEDERATION_TOKEN", "FEDERATION_CONFIG", "FEDERATION_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def federation_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    """The API server on the embedded SQLite default; the CLI is pointed at it through the kubeconfig it
    wrote (KUBECONFIG)."""
    point_cli_at(monkeypatch, tmp_path / "data" / "federation.kubeconfig")
    running = start_server(tmp_path)
    try:
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def start_sim():
    """Start member-cluster simulators with ``start_sim(**config_overrides)`` (real sockets, TLS);
    every one still running is stopped after the test."""
    from federation.sim import run_simulator_in_thread
    from tests.members.helpers import make_config

    running = []

    def start(**overrides):
        sim = run_simulator_in_thread(make_config(**overrides))
        running.append(sim)
        return sim

    yield start
    for sim in running:
        if sim.thread.is_alive():
            sim.stop()
