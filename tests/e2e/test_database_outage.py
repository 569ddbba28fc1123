"""The database goes away under a running server and comes back (issue 12, "Crash safety").

Postgres stops taking connections for this database and every open one is killed — what the server sees
when Postgres restarts. `/readyz` says not ready and writes answer 503 with Retry-After; once the database
is back the same server process answers again and its controllers carry on (a scale done after the
outage reaches the member) without a restart of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from federation.sim import RunningSimulator, SimulatorConfig, run_simulator_in_thread
from tests.conftest import RunningServer, _admin_conninfo, _reset_postgres, start_server
from tests.e2e.test_three_members import (
    DEPLOYMENTS,
    FAST,
    POLICIES,
    join,
    policy,
    put,
    scale,
    wait_members,
)
from tests.members.helpers import deployment, wait_for

pytestmark = pytest.mark.postgres


@pytest.fixture
def database(postgres_server_url: str) -> Iterator[str]:
    _reset_postgres(postgres_server_url)
    try:
        yield postgres_server_url
    finally:
        allow_connections(postgres_server_url, allowed=True)


@pytest.fixture
def server(tmp_path: Path, database: str) -> Iterator[RunningServer]:
    running = start_server(tmp_path, database_url=database, controllers=FAST)
    try:
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def members() -> Iterator[dict[str, RunningSimulator]]:
    sim = run_simulator_in_thread(SimulatorConfig(name="member1", nodes=2, node_cpu="8", ready_delay=0.1))
    try:
        yield {"member1": sim}
    finally:
        sim.stop()


def allow_connections(url: str, *, allowed: bool) -> None:
    """Open or close the database to new connections; closing also kills the open ones."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(_admin_conninfo(), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
            )


def readyz(http: httpx.Client) -> int:
    try:
        return http.get("/readyz").status_code
    except httpx.HTTPError:
        return 0


def test_the_server_rides_out_a_database_outage(
    server: RunningServer, database: str, members: dict[str, RunningSimulator]
) -> None:
    with server.client() as http:
        join(http, "member1", members["member1"])
        put(http, POLICIES, policy("web", "web", ["member1"]))
        put(http, DEPLOYMENTS, deployment("web", 2))
        wait_members(members, "web", {"member1": 2})

        allow_connections(database, allowed=False)
        wait_for(lambda: readyz(http) == 503, timeout=30, what="/readyz to say not ready")
        refused = http.put(f"{DEPLOYMENTS}/web", json=deployment("web", 3))
        assert refused.status_code == 503, refused.text
        assert refused.headers.get("Retry-After")
        assert refused.json()["kind"] == "Status"

        allow_connections(database, allowed=True)
        wait_for(lambda: readyz(http) == 200, timeout=30, what="/readyz to recover")
        scale(http, "web", 4)
        wait_members(members, "web", {"member1": 4})
