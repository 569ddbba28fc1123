"""`federation token create --ttl`, `token list`, `token revoke`: server-side commands on the database, and
their effect on a running server (an expired or revoked token is 401 at its next request)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from federation.cli.cmd_server import Duration
from federation.cli.main import cli
from tests.conftest import RunningServer, start_server


def run(data_dir: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--data-dir", str(data_dir)], catch_exceptions=False)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    running = start_server(tmp_path)
    yield running
    running.process.stop()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("1h", timedelta(hours=1)),
        ("7d", timedelta(days=7)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("1h30m15s", timedelta(hours=1, minutes=30, seconds=15)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert Duration().convert(text, None, None) == expected


@pytest.mark.parametrize("text", ["", "1", "h", "1x", "-1h", "1.5h", "0s", "0d0h", "1h 30m", "1hh"])
def test_bad_durations_are_usage_errors(tmp_path: Path, text: str) -> None:
    result = run(tmp_path / "data", "token", "create", "--role", "viewer", "--ttl", text)
    assert result.exit_code == 2
    assert "--ttl" in result.output and "Traceback" not in result.output


def test_list_shows_every_token_but_never_its_secret(tmp_path: Path) -> None:
    data = tmp_path / "data"
    forever = run(data, "token", "create", "--role", "viewer", "--name", "ci")
    brief = run(data, "token", "create", "--role", "agent", "--cluster", "edge1", "--ttl", "2h")
    assert forever.exit_code == 0 and brief.exit_code == 0, brief.output
    listed = run(data, "token", "list")
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.output.splitlines()
    assert header.split() == ["NAME", "ROLE", "CLUSTER", "CREATED", "EXPIRES", "LAST-USED"]
    assert [row.split()[:3] for row in rows] == [
        ["agent-edge1", "agent", "edge1"],
        ["ci", "viewer", "<none>"],
    ]
    expires = datetime.strptime(rows[0].split()[4], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert timedelta(hours=1, minutes=59) < expires - datetime.now(UTC) <= timedelta(hours=2)
    assert rows[1].split()[4:] == ["<never>", "<never>"]
    for secret in (forever.output.strip(), brief.output.strip()):
        assert secret.startswith("fed_") and secret not in listed.output


def test_revoke_removes_the_token_and_an_unknown_name_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run(data, "token", "create", "--role", "viewer", "--name", "ci")
    revoked = run(data, "token", "revoke", "ci")
    assert revoked.exit_code == 0 and revoked.output.strip() == 'token "ci" revoked'
    assert run(data, "token", "list").output.strip() == "No tokens found."
    again = run(data, "token", "revoke", "ci")
    assert again.exit_code == 1
    assert again.output.strip() == "Error: no token named 'ci' (see `federation token list`)"


def test_a_running_server_refuses_a_token_revoked_in_its_process_at_once(server: RunningServer) -> None:
    """The CLI runs in the server's process here, so the revocation evicts the server's cached token at
    once; one made by another process takes effect within ``api.token_cache_seconds`` (``test_token_cache``)."""
    data = Path(server.process.settings.data_dir)
    viewer = run(data, "token", "create", "--role", "viewer", "--name", "v").output.strip()
    with server.client(viewer) as http:
        assert http.get("/apis/policy.karmada.io/v1alpha1/propagationpolicies").status_code == 200
        run(data, "token", "revoke", "v")
        refused = http.get("/apis/policy.karmada.io/v1alpha1/propagationpolicies")
    assert refused.status_code == 401 and refused.json()["reason"] == "Unauthorized"
    assert refused.json()["kind"] == "Status"
    lasting = run(data, "token", "create", "--role", "viewer", "--name", "w", "--ttl", "1h").output.strip()
    with server.client(lasting) as http:
        assert http.get("/apis/policy.karmada.io/v1alpha1/propagationpolicies").status_code == 200
    listed = run(data, "token", "list").output
    used = next(line for line in listed.splitlines() if line.startswith("w "))
    assert used.split()[-1] != "<never>"  # last used: the request above


def test_token_list_shows_an_expired_token_as_expired(server: RunningServer) -> None:
    from federation.store.tokens import TokenRepository

    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    assert server.process.api_context is not None
    with server.process.api_context.uow() as session:
        _, plaintext = TokenRepository(session, clock=lambda: an_hour_ago).create(
            "old", "viewer", ttl=timedelta(minutes=30)
        )
    with server.client(plaintext) as http:
        answer = http.get("/apis/policy.karmada.io/v1alpha1/propagationpolicies")
    assert answer.status_code == 401 and answer.json()["reason"] == "Unauthorized"
    listed = run(Path(server.process.settings.data_dir), "token", "list").output
    old = next(line for line in listed.splitlines() if line.startswith("old "))
    assert "(expired)" in old
