"""Every error is a Status (issue 7): a database outage is 503 with Retry-After and two log lines (start and
end), not a traceback per request; an unexpected exception is a 500 Status with its traceback logged once;
the framework's own errors (unknown route, unserved method, bad parameter) are Status bodies too."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import Engine, event

from federation.api import objects
from federation.api.outage import RETRY_AFTER_SECONDS
from federation.cli import server
from federation.settings import load_settings
from tests.api import manifests as m
from tests.conftest import PG_ADMIN_URL, RunningServer

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
OUTAGE_STARTED = "database unavailable"
OUTAGE_ENDED = "database available again"


def start_api(tmp_path: Path, database_url: str) -> RunningServer:
    """The API alone (no controllers): only the test's requests touch the database."""
    settings = load_settings(data_dir=str(tmp_path / "data"), database_url=database_url, api={"port": 0})
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    return RunningServer(process)


@pytest.fixture
def api_server(tmp_path: Path, database_url: str) -> Iterator[RunningServer]:
    running = start_api(tmp_path, database_url)
    try:
        yield running
    finally:
        running.process.stop()


def engine_of(running: RunningServer) -> Engine:
    context = running.process.api_context
    assert context is not None
    return context.engine


@contextmanager
def connections_refused(engine: Engine) -> Iterator[None]:
    """Every new database connection fails as a down server's would; pooled ones are dropped first."""

    def refuse(dialect: Any, *_args: Any) -> None:
        raise dialect.loaded_dbapi.OperationalError("connection refused (the test's outage)")

    event.listen(engine, "do_connect", refuse)
    engine.dispose()
    try:
        yield
    finally:
        event.remove(engine, "do_connect", refuse)


def messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def assert_unavailable(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    body = answer.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "ServiceUnavailable", 503)
    assert body["details"]["retryAfterSeconds"] == RETRY_AFTER_SECONDS


# -- database outages --------------------------------------------------------------------------------------


def test_a_database_outage_is_503_with_retry_after_and_logged_once(
    api_server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with api_server.client() as http:
        assert http.get(CONFIGMAPS).status_code == 200
        with connections_refused(engine_of(api_server)):
            during = [
                http.get(CONFIGMAPS),
                http.post(CONFIGMAPS, json=m.CONFIGMAP),
                http.get("/apis"),
                http.post("/federation/v1/plan", json={"kind": "List", "items": []}),
            ]
            assert http.get("/readyz").status_code == 503
        for answer in during:
            assert_unavailable(answer)
        assert http.get(CONFIGMAPS).status_code == 200
        assert http.post(CONFIGMAPS, json=m.CONFIGMAP).status_code == 201  # nothing half-written before
    started, ended = messages(caplog, OUTAGE_STARTED), messages(caplog, OUTAGE_ENDED)
    assert len(started) == 1 and "connection refused (the test's outage)" in started[0]
    assert len(ended) == 1 and "5 request(s) answered 503" in ended[0]
    assert [r for r in caplog.records if r.exc_info] == []  # no traceback for an outage


def test_each_outage_is_logged_once_when_it_starts_and_once_when_it_ends(
    api_server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    engine = engine_of(api_server)
    with api_server.client() as http:
        for _ in range(2):
            with connections_refused(engine):
                for _ in range(3):
                    assert_unavailable(http.get(CONFIGMAPS))
            assert http.get(CONFIGMAPS).status_code == 200
    assert len(messages(caplog, OUTAGE_STARTED)) == 2
    assert len(messages(caplog, OUTAGE_ENDED)) == 2


@pytest.fixture
def outage_database(postgres_server_url: str) -> Iterator[tuple[str, Callable[[bool], None]]]:
    """A Postgres database of its own, and a switch that takes it down (refusing new connections and
    terminating the open ones, as a restarting server does) and brings it back."""
    name = f"federation_outage_{uuid.uuid4().hex[:10]}"
    admin = PG_ADMIN_URL.replace("postgresql+psycopg://", "postgresql://", 1)

    def available(up: bool) -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {"true" if up else "false"}')
            if not up:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name]
                )

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_ADMIN_URL.rpartition('/')[0]}/{name}", available
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
def test_a_real_postgres_outage_is_503_until_the_database_is_back(
    tmp_path: Path, outage_database: tuple[str, Callable[[bool], None]], caplog: pytest.LogCaptureFixture
) -> None:
    url, available = outage_database
    caplog.set_level(logging.INFO)
    running = start_api(tmp_path, url)
    try:
        with running.client() as http:
            assert http.post(CONFIGMAPS, json=m.CONFIGMAP).status_code == 201
            available(False)
            for _ in range(3):
                assert_unavailable(http.get(CONFIGMAPS))
            available(True)
            listed = http.get(CONFIGMAPS)
            assert listed.status_code == 200 and len(listed.json()["items"]) == 1
    finally:
        running.process.stop()
    assert len(messages(caplog, OUTAGE_STARTED)) == 1
    assert len(messages(caplog, OUTAGE_ENDED)) == 1
    assert [r for r in caplog.records if r.exc_info] == []


# -- everything else ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_unexpected_error_is_a_500_status_with_one_traceback(
    api_server: RunningServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("boom: internal detail")

    monkeypatch.setattr(objects, "list_objects", broken)
    caplog.set_level(logging.INFO)
    with api_server.client() as http:
        answer = http.get(CONFIGMAPS)
        assert answer.status_code == 500
        body = answer.json()
        assert (body["kind"], body["reason"], body["code"]) == ("Status", "InternalError", 500)
        assert "internal detail" not in answer.text
        assert 'code="500"' in http.get("/metrics").text
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1
    assert tracebacks[0].exc_info is not None and isinstance(tracebacks[0].exc_info[1], RuntimeError)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("method", "path", "code", "reason"),
    [
        ("GET", "/nope", 404, "NotFound"),
        ("GET", "/federation/v1/nope", 404, "NotFound"),
        ("DELETE", "/healthz", 405, "MethodNotAllowed"),
        ("POST", "/version", 405, "MethodNotAllowed"),
        ("PATCH", f"{CONFIGMAPS}/cfg", 415, "UnsupportedMediaType"),  # application/json is no patch type
        ("PATCH", "/apis", 405, "MethodNotAllowed"),
        ("DELETE", "/federation/v1/clusters/m1?force=maybe", 400, "BadRequest"),
    ],
)
def test_framework_errors_are_status_bodies(
    api_server: RunningServer, method: str, path: str, code: int, reason: str
) -> None:
    with api_server.client() as http:
        answer = http.request(method, path, json={"kind": "ConfigMap"} if method == "PATCH" else None)
    body = answer.json()
    assert answer.status_code == code, answer.text
    assert "detail" not in body
    assert (body["kind"], body["status"], body["reason"], body["code"]) == ("Status", "Failure", reason, code)
    assert body["message"]
