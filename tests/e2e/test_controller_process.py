"""`serve` on Postgres runs its controllers in a child process (``cli.controller_process``): API writes
wake them across the pipe, the child never outlives its `serve`, and a child that dies is started again.
Real `serve` processes; the wake-pipe reader and the non-blocking wake are also tested alone."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from sqlalchemy import Engine, text

from federation.cli import controller_process
from federation.cli.controller_process import ControllerProcess, _follow_wakes
from federation.settings import Settings
from federation.store import migrate
from federation.store.crypto import generate_key
from federation.store.db import autovacuum_off, make_engine
from tests.e2e.test_replicas import Replica, database, leader, leader_lease  # noqa: F401 (fixture)
from tests.e2e.test_three_members import DEPLOYMENTS, POLICIES, put
from tests.members.helpers import deployment, wait_for

DEADLINE = 60.0
T = TypeVar("T")
# Intervals far longer than the waits below: only a wake through the pipe can explain a quick placement.
SLOW = {
    "SCHEDULER_INTERVAL_SECONDS": "120",
    "EXECUTION_INTERVAL_SECONDS": "120",
    "WORK_SYNC_INTERVAL_SECONDS": "120",
    "DETECTOR_INTERVAL_SECONDS": "120",
    "LEADER_LEASE_SECONDS": "3",
    "CLAIM_LEASE_SECONDS": "3",
}


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


def niceness(pid: int) -> int:
    # /proc/<pid>/stat: the 19th field, counted after the command's closing parenthesis
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status").read_text()
    return "State:\tZ" not in status


def bindings(http: httpx.Client) -> int:
    listed = http.get("/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings").json()
    return len(listed["items"])


def policy() -> dict:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "all", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"clusterAffinity": {"clusterNames": ["member1"]}},
        },
    }


@contextmanager
def serving(tmp_path: Path, database_url: str) -> Iterator[Replica]:
    """One `serve` on the test database with slow controller intervals (and the environment's settings),
    serving and its controllers' child leading; stopped at the end."""
    running = Replica(tmp_path, "one", database_url, generate_key().decode(), SLOW)
    try:
        leading(running, database_url)
        yield running
    finally:
        running.stop()


@pytest.fixture
def replica(tmp_path: Path, database: str) -> Iterator[Replica]:  # noqa: F811
    with serving(tmp_path, database) as running:
        yield running


def on_database(database_url: str, use: Callable[[Engine], T]) -> T:
    """``use`` of an engine on the test database, disposed afterwards."""
    engine = make_engine(database_url)
    try:
        return use(engine)
    finally:
        engine.dispose()


def leading(replica: Replica, database_url: str) -> None:
    """Until the replica serves and its controllers' child holds the leader lease."""
    wait_for(replica.ready, timeout=DEADLINE, interval=0.1, what="serve to be ready")
    wait_for(lambda: leader(database_url), timeout=DEADLINE, interval=0.1, what="the child to lead")


@pytest.mark.postgres
def test_an_api_write_wakes_the_controllers_in_their_own_process(
    tmp_path: Path,
    database: str,  # noqa: F811
    replica: Replica,
) -> None:
    (child,) = children(replica.process.pid)
    assert "controllers" in Path(f"/proc/{child}/cmdline").read_text()
    assert niceness(child) == min(niceness(replica.process.pid) + 5, 19)  # process_niceness: 5
    headers = {"Authorization": f"Bearer {replica.admin_token()}"}
    with httpx.Client(base_url=replica.url, headers=headers, timeout=30) as http:
        time.sleep(1.0)  # past the controllers' first passes: the next tick is 120 s away
        put(http, POLICIES, policy())
        put(http, DEPLOYMENTS, deployment("woken", 1))
        # The detector (and nothing else) makes the binding: woken through the pipe, not by its tick.
        wait_for(lambda: bindings(http) == 1, timeout=15, interval=0.1, what="the binding")
    replica.stop()
    log = (tmp_path / "one.log").read_text()
    assert "Traceback" not in log
    # Said once at the start, exactly when the server runs without autovacuum (this machine's does).
    assert ("runs with autovacuum off" in log) == on_database(database, autovacuum_off)


@pytest.mark.postgres
def test_the_child_ends_with_its_serve_even_when_serve_is_sigkilled(
    tmp_path: Path,
    database: str,  # noqa: F811
    replica: Replica,
) -> None:
    (child,) = children(replica.process.pid)
    held = leader_lease(database)
    replica.process.send_signal(signal.SIGKILL)  # serve alone: its child sees the pipe close
    replica.process.wait()
    wait_for(lambda: not alive(child), timeout=DEADLINE, interval=0.1, what="the child to end")
    released = leader_lease(database)
    assert released.holder is None  # released on its way out, not left to run out
    assert released.expires_at is not None and held.expires_at is not None
    assert released.expires_at < held.expires_at
    replica.stop()
    log = (tmp_path / "one.log").read_text()
    assert "controllers: stopped" in log and "Traceback" not in log


@pytest.mark.postgres
def test_a_child_that_dies_is_started_again_and_leads_again(
    tmp_path: Path,
    database: str,  # noqa: F811
    replica: Replica,
) -> None:
    (first,) = children(replica.process.pid)
    dead_leader = leader(database)
    os.kill(first, signal.SIGKILL)
    wait_for(
        lambda: [c for c in children(replica.process.pid) if c != first and alive(c)],
        timeout=DEADLINE,
        interval=0.1,
        what="another child",
    )
    wait_for(
        lambda: leader(database) not in (None, dead_leader),
        timeout=DEADLINE,
        interval=0.2,
        what="the new child to take the lease when the dead one's runs out",
    )
    assert replica.ready()  # the API served throughout
    replica.process.send_signal(signal.SIGTERM)
    assert replica.process.wait(timeout=DEADLINE) == 0
    assert leader_lease(database).holder is None
    replica.stop()
    log = (tmp_path / "one.log").read_text()
    assert f"process {first} exited with -9; starting another" in log and "Traceback" not in log


def session_processes(session: int) -> list[int]:
    """The live processes of a session (a `Replica` runs in one of its own: `serve` and its child)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                if os.getsid(int(entry.name)) == session and alive(int(entry.name)):
                    found.append(int(entry.name))
    return found


def reading_stdin(pid: int) -> bool:
    """Whether the process is blocked in read(2) on its descriptor 0 (``/proc/<pid>/syscall``: number, fd)."""
    return Path(f"/proc/{pid}/syscall").read_text().startswith("0 0x0 ")


def test_a_launched_child_that_never_gets_its_settings_ends_quietly(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    handle = ControllerProcess(Settings(data_dir=tmp_path))
    handle.launch()  # as `serve` does before its own imports
    assert handle._launched is not None
    child = handle._launched[0]
    handle.stop()  # the parent's start failed: the child's stdin closes without settings
    assert child.returncode == 0
    assert "Traceback" not in capfd.readouterr().err  # it read nothing, parsed nothing, ran nothing


def test_a_ctrl_c_leaves_a_child_waiting_for_its_settings_to_its_parent(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    handle = ControllerProcess(Settings(data_dir=tmp_path))
    handle.launch()
    assert handle._launched is not None
    child = handle._launched[0]
    try:
        wait_for(lambda: reading_stdin(child.pid), timeout=DEADLINE, interval=0.05, what="the child to wait")
        child.send_signal(signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
        time.sleep(0.5)
        assert child.poll() is None  # still waiting: its parent decides, by closing its stdin
    finally:
        handle.stop()
    assert child.returncode == 0
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.postgres
def test_start_hands_the_settings_to_the_child_launched_before(
    tmp_path: Path,
    database: str,  # noqa: F811
) -> None:
    migrate.upgrade(database)  # the parent's part, before it hands the settings over
    handle = ControllerProcess(Settings(data_dir=tmp_path, database_url=database))
    handle.launch()
    assert handle._launched is not None
    launched = handle._launched[0]
    time.sleep(1.0)
    assert launched.poll() is None and leader(database) is None  # waiting: no settings, no lease yet
    try:
        handle.start()
        assert handle._child is launched  # the same process, not a second one
        wait_for(
            lambda: leader(database) is not None, timeout=DEADLINE, interval=0.1, what="the child to lead"
        )
    finally:
        handle.stop()
    assert launched.returncode == 0
    assert leader_lease(database).holder is None  # released on its way out


@pytest.mark.postgres
def test_a_serve_whose_start_fails_leaves_no_controllers_process(
    tmp_path: Path,
    database: str,  # noqa: F811
) -> None:
    first = Replica(tmp_path, "first", database, generate_key().decode(), SLOW)
    try:
        wait_for(first.ready, timeout=DEADLINE, interval=0.1, what="the first serve")
    finally:
        first.stop()
    # Another key than the one the database was written with: the start stops at the key check, after the
    # controllers' child was launched (on Postgres, before anything else).
    wrong = Replica(tmp_path, "wrong", database, generate_key().decode(), SLOW)
    assert wrong.process.wait(timeout=DEADLINE) != 0
    wait_for(
        lambda: not session_processes(wrong.process.pid),
        timeout=DEADLINE,
        interval=0.1,
        what="the launched child to end",
    )
    wrong.stop()
    log = (tmp_path / "wrong.log").read_text()
    assert "encryption key" in log and "Traceback" not in log
    assert leader(database) is None  # the first released the lease; the launched child never took it


def test_a_serve_on_sqlite_keeps_its_controllers_in_process(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert not controller_process.runs_apart(settings)
    postgres = settings.model_copy(update={"database_url": "postgresql+psycopg://x@127.0.0.1/db"})
    assert controller_process.runs_apart(postgres)
    for short in ("postgres://x@127.0.0.1/db", "postgresql://x@127.0.0.1/db"):  # as normalize_url takes them
        assert controller_process.runs_apart(settings.model_copy(update={"database_url": short}))
    off = postgres.model_copy(
        update={"controllers": postgres.controllers.model_copy(update={"separate_process": False})}
    )
    assert not controller_process.runs_apart(off)


def test_the_wake_reader_wakes_each_kind_once_per_read_and_stops_at_end_of_file() -> None:
    read_fd, write_fd = os.pipe()
    woken: list[str] = []
    stopped = threading.Event()
    reader = threading.Thread(target=_follow_wakes, args=(read_fd, woken.append, stopped))
    os.write(write_fd, b"Deployment\nDeployment\nPropagationP")  # a line cut across two reads
    reader.start()
    wait_for(lambda: woken == ["Deployment"], timeout=5, interval=0.01, what="the first wake")
    os.write(write_fd, b"olicy\n")
    wait_for(lambda: woken == ["Deployment", "PropagationPolicy"], timeout=5, interval=0.01, what="the rest")
    assert not stopped.is_set()
    os.close(write_fd)  # the parent is gone
    reader.join(timeout=5)
    assert stopped.is_set() and not reader.is_alive()


def test_a_wake_never_blocks_when_the_child_does_not_read(tmp_path: Path) -> None:
    handle = ControllerProcess(Settings(data_dir=tmp_path))
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    handle._wake_fd = write_fd
    try:

        def flood() -> None:
            for _ in range(20_000):  # ~340 KB: more than a pipe holds
                handle.wake("ResourceTemplate")

        writer = threading.Thread(target=flood, daemon=True)
        writer.start()
        writer.join(timeout=60)
        assert not writer.is_alive()  # on a blocking pipe it would wait for a reader forever
        assert len(os.read(read_fd, 1 << 20)) < 20_000 * len(b"ResourceTemplate\n")  # the rest was dropped
    finally:
        os.close(read_fd)
        os.close(write_fd)


def last_analyze(engine: Engine, table: str) -> object:
    with engine.connect() as connection:
        statement = text("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = :table")
        return connection.execute(statement, {"table": table}).scalar()


@pytest.mark.postgres
def test_the_leader_maintains_the_tables_exactly_where_the_server_has_no_autovacuum(
    tmp_path: Path,
    database: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FEDERATION_DATABASE__MAINTENANCE_INTERVAL_SECONDS", "0.5")
    with serving(tmp_path, database) as running:
        headers = {"Authorization": f"Bearer {running.admin_token()}"}
        with httpx.Client(base_url=running.url, headers=headers, timeout=30) as http:
            for index in range(20):
                put(http, DEPLOYMENTS, deployment(f"app{index}", 1))

        def templates_analyzed() -> bool:
            return (
                on_database(database, lambda engine: last_analyze(engine, "resource_templates")) is not None
            )

        if on_database(database, autovacuum_off):  # this machine's server: the table gets its statistics
            wait_for(
                templates_analyzed,
                timeout=DEADLINE,
                interval=0.5,
                what="the leader to analyze resource_templates",
            )
        else:  # autovacuum's to do: the leader's checks find nothing, it runs no ANALYZE of its own
            time.sleep(15)
            assert not templates_analyzed()
    assert "Traceback" not in (tmp_path / "one.log").read_text()
