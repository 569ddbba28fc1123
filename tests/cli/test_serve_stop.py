"""How `federation serve` ends: SIGTERM and SIGINT stop it cleanly (controllers stopped, leader lease
released, exit 0), and a start that fails half-way leaves no lease held. Real processes on SQLite; the
two-replica takeover on Postgres is in tests/e2e/test_replicas.py."""

from __future__ import annotations

import signal
import socket
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from federation.store.db import make_engine
from federation.store.tables import LeaseRow
from tests.cli.test_server_commands import FEDERATION, _env
from tests.members.helpers import wait_for


def _serve(tmp_path: Path, port: int = 0) -> subprocess.Popen:
    data = str(tmp_path / "data")
    command = [*FEDERATION, "serve", "--port", str(port), "--insecure-http", "--data-dir", data]
    return subprocess.Popen(
        command, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _leader_lease(tmp_path: Path) -> tuple[str | None, datetime | None] | None:
    """(holder, expires_at) of the leader lease row; None before the schema or the row exists."""
    database = tmp_path / "data" / "federation.db"
    if not database.exists():
        return None
    engine = make_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as connection:
            statement = select(LeaseRow.holder, LeaseRow.expires_at).where(LeaseRow.kind == "leader")
            row = connection.execute(statement).first()
    except Exception:  # the schema is still being migrated
        return None
    finally:
        engine.dispose()
    return None if row is None else (row[0], row[1])


def _held_lease(tmp_path: Path) -> tuple[str | None, datetime | None] | None:
    lease = _leader_lease(tmp_path)
    return lease if lease is not None and lease[0] is not None else None


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_stops_the_controllers_releases_the_lease_and_exits_0(tmp_path, stop_signal):
    process = _serve(tmp_path)
    try:
        held = wait_for(
            lambda: _held_lease(tmp_path),
            timeout=60,
            interval=0.1,
            what="serve to take the leader lease",
        )
        process.send_signal(stop_signal)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, output
    holder, expires_at = _leader_lease(tmp_path) or (None, None)
    assert holder is None  # released, not left to run out
    assert held is not None and held[1] is not None
    assert expires_at is not None and expires_at < held[1]
    assert f"stopping on {stop_signal.name}" in output
    assert "Traceback" not in output and "Aborted" not in output


def test_a_start_that_fails_after_the_controllers_started_leaves_no_lease_held(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        process = _serve(tmp_path, port)  # the socket is bound after the controllers start
        output, _ = process.communicate(timeout=60)
    assert process.returncode != 0, output
    assert f"cannot listen on 127.0.0.1:{port}" in output and "Traceback" not in output
    lease = _leader_lease(tmp_path)
    assert lease is None or lease[0] is None, output
