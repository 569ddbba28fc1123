"""Every file the project writes that holds a secret is the owner's only: the data directory 0700, the SQLite
database (and its WAL) 0600, the key file 0600, the CA's and the serving certificate's keys 0600 (their
directory 0700), every kubeconfig 0600 — whatever the umask (the tests run with umask 0, where a
default-mode file would be world-writable)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from federation.cli import cmd_sim
from federation.cli.cmd_up import start_up
from federation.cli.main import cli
from federation.members.kubeconfig import write_kubeconfig
from federation.settings import load_settings
from federation.store.db import make_engine, private_directory
from tests.conftest import point_cli_at


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(autouse=True)
def permissive_umask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    point_cli_at(monkeypatch, tmp_path / "data" / "federation.kubeconfig")
    monkeypatch.delenv("FEDERATION_DATABASE_URL", raising=False)
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_up_writes_a_private_data_directory_database_keys_and_kubeconfigs(tmp_path: Path) -> None:
    settings = load_settings(data_dir=str(tmp_path / "data"), api={"port": 0})
    stack = start_up(settings, members=1, ready_delay=0.1)
    try:
        data = tmp_path / "data"
        assert mode(data) == 0o700
        assert mode(data / "federation.db") == 0o600
        assert mode(data / "federation.db-wal") == 0o600  # WAL mode: SQLite copies the database's mode
        assert mode(data / "secret.key") == 0o600
        assert mode(data / "pki") == 0o700
        assert mode(data / "pki" / "ca.key") == mode(data / "pki" / "apiserver.key") == 0o600
        assert mode(data / "federation.kubeconfig") == 0o600
        assert mode(data / "members.kubeconfig") == 0o600
    finally:
        stack.stop()


def test_token_create_on_a_new_data_directory_makes_it_private(tmp_path: Path) -> None:
    data = tmp_path / "nested" / "data"
    result = CliRunner().invoke(cli, ["token", "create", "--role", "viewer", "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert mode(data) == 0o700 and mode(data / "federation.db") == 0o600


def test_an_existing_open_data_directory_and_database_are_tightened(tmp_path: Path) -> None:
    """What an older version left behind: a 0755 directory and a 0644 database with its WAL."""
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    database, wal = data / "federation.db", data / "federation.db-wal"
    engine = make_engine(f"sqlite:///{database}")
    with engine.connect() as held:  # an open connection keeps the WAL file in place
        held.execute(text("CREATE TABLE t (x INTEGER)"))
        held.commit()
        for path in (database, wal):
            path.chmod(0o644)
        private_directory(data)
        make_engine(f"sqlite:///{database}").dispose()
        assert mode(data) == 0o700
        assert mode(database) == 0o600
        assert mode(wal) == 0o600
    engine.dispose()


def test_sim_kubeconfig_out_is_0600_even_over_an_open_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "member.yaml"
    out.write_text("old: content\n")
    out.chmod(0o644)

    class QuietSimulator:
        """The CLI's part only: no sockets, returns at once instead of serving."""

        url = "https://127.0.0.1:1"

        def __init__(self, config: Any) -> None:
            self.kubeconfig = {"apiVersion": "v1", "kind": "Config", "users": [{"user": {"token": "t"}}]}

        def serve_forever(self) -> None:
            return None

    monkeypatch.setattr(cmd_sim, "Simulator", QuietSimulator)
    result = CliRunner().invoke(cli, ["sim", "--kubeconfig-out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert mode(out) == 0o600
    assert "token: t" in out.read_text()


def test_kubeconfig_writer_is_0600_over_leftovers(tmp_path: Path) -> None:
    config = tmp_path / "federation.kubeconfig"
    leftover = tmp_path / f".federation.kubeconfig.{os.getpid()}.tmp"  # a crashed earlier write
    leftover.write_text("")
    leftover.chmod(0o666)
    write_kubeconfig(config, {"apiVersion": "v1", "kind": "Config"})
    assert mode(config) == 0o600 and not leftover.exists()
    nested = tmp_path / "kube" / "config"
    write_kubeconfig(nested, {"apiVersion": "v1", "kind": "Config"})
    assert mode(nested) == 0o600
