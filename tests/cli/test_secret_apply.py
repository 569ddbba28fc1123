"""A Secret applied through the CLI is stored encrypted (the raw column holds no plaintext, both backends),
reads back as written, and re-applying it is `unchanged` (content is compared, not ciphertext)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from sqlalchemy import Text, cast, select

from federation.cli.main import cli
from federation.store.tables import ResourceTemplateRow, table_of
from tests.conftest import RunningServer, point_cli_at, start_server

PASSWORD = "s3cret-P4ssw0rd-for-the-db"
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "db-credentials", "namespace": "default"},
    "type": "Opaque",
    "data": {"password": base64.b64encode(PASSWORD.encode()).decode()},
    "stringData": {"username": "app-user-7f3a"},
}


@pytest.fixture
def server(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    point_cli_at(monkeypatch, tmp_path / "data" / "federation.kubeconfig")
    running = start_server(tmp_path, database_url)
    yield running
    running.process.stop()


def apply(path: Path) -> str:
    result = CliRunner().invoke(cli, ["apply", "-f", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def shown_secret() -> dict:
    shown = CliRunner().invoke(cli, ["get", "secret", "db-credentials", "-o", "yaml"], catch_exceptions=False)
    return yaml.safe_load(shown.output)


def test_secret_is_encrypted_at_rest_and_reapply_is_unchanged(server: RunningServer, tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(yaml.safe_dump(SECRET))
    assert apply(path) == "secret/db-credentials created"
    created = shown_secret()
    assert apply(path) == "secret/db-credentials unchanged"
    stored = shown_secret()
    assert stored["data"] == SECRET["data"] and stored["stringData"] == SECRET["stringData"]
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # nothing written
    assert server.process.api_context is not None
    table = table_of(ResourceTemplateRow)
    with server.process.api_context.engine.connect() as connection:
        raw = connection.scalars(select(cast(table.c.extra, Text)).where(table.c.kind == "Secret")).one()
    for plaintext in (PASSWORD, SECRET["data"]["password"], "app-user-7f3a"):
        assert plaintext not in raw
