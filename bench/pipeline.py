"""The whole pipeline end to end on Postgres: API writes → detector → scheduler → execution → work sync →
members, with real `serve` processes (issue 12, "Benchmarks").

One command: ``bench/pipeline.py --bindings N --clusters M --replicas-of-serve R [--json]``.

Set-up (not timed): ``pgbench -i`` on a scratch database, then ``pgbench -N`` (one-row transactions) on it
for ``--pgbench-seconds`` with ``--pgbench-clients`` clients: the database's own pace on this machine,
measured in the same run. A fresh benchmark database; R ``python -m federation serve`` processes on it
(one Fernet key, plain HTTP on free ports, each its own data directory, the controllers' default
intervals unless ``--interval`` is given); M simulated member clusters (``federation.sim``, TLS), each in
a process of its own and counting the requests it answers; the members joined through
``POST /federation/v1/clusters/join``. (Three simulators in one process share a GIL: their status LISTs,
seconds each at 1,000 Deployments, starved each other's applies until the LISTs timed out.)

Timed from the first write (t0): one PropagationPolicy per namespace (Divided, equal static weights over
the M clusters) and N Deployments of ``--replicas`` replicas (default M: one per member, N x M Works),
spread over ``--namespaces`` namespaces (default one per 20 Deployments: the simulator renders a workload's
status from every pod of its namespace, so 1,000 in one namespace make each member LIST longer than the
members' 10 s request timeout), PUT by ``--writers`` client threads spread over the replicas. A poller reads
progress from the database twice a second. Then, in order:

- idle: ``--settle`` seconds after every binding is FullyApplied, a ``--idle-seconds`` window with nothing
  changing: server CPU, transactions, statements and member calls per second;
- cold start: the servers are stopped (SIGTERM, ``--stop-signal``) and started again at once on the same
  database, everything in sync; the figure is the time from the start until every replica answers
  ``/readyz`` 200, every controller that ran more than once in the idle window has run, and after both a
  3 s window has passed with no write at a member and the servers at the idle level: CPU at most
  max(1.5 * idle, idle + 10 points of a core) and rows written (pg_stat_database) at most
  max(1.5 * idle, idle + 5) per second. The level is the measured idle, not zero: idle is not free yet.

Figures (one JSON object with ``--json``): ``api_writes_per_s`` (N / first write → last answer),
``api_write_p50_ms`` / ``api_write_p99_ms`` (Deployment PUTs), ``scheduled_per_s`` (N / t0 → every
binding scheduled), ``works_per_s`` (Works / t0 → every Work written), ``seconds_to_all_applied`` (t0 →
every Work ``Applied`` on its member, the ``works.applied`` column), ``pgbench_tps``,
``rss_mb_per_10k_bindings`` (the largest growth of a server's VmRSS from before the first write to after
the idle window, scaled to 10,000 bindings), ``idle_cpu_percent`` (all servers, percent of one core),
``idle_queries_per_s`` (pg_stat_database ``xact_commit + xact_rollback`` of the benchmark database: SQL
transactions per second), ``cold_start_seconds``; per binding over t0 → every binding FullyApplied (as the
issue's table): SQL statements (counted in each server, see below), SQL transactions and rows written
(pg_stat_database), member calls (counted at the members), server CPU (``/proc``). Breakdowns per
controller (runs, thread CPU, statements, commits), per member request shape (calls and the member's mean
time to answer), and the CPU of the members, are in the JSON too. A run that does not converge within
``--timeout`` prints what it reached (``timed_out``, the counts) and exits 1.

SQL statements: ``pg_stat_statements`` needs ``shared_preload_libraries``, which a shared server cannot be
restarted for, so each server process is started through ``instrumented_serve``: ``python -m federation``
unchanged, plus a SQLAlchemy ``before_cursor_execute`` listener and a wrapper around the controller runner's
job method that labels each statement with the controller that ran it and adds up the controllers' thread
CPU. Transaction control (BEGIN/COMMIT/SAVEPOINT/RELEASE) is left out, as in ``bench_failover.py``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import json
import math
import os
import platform
import queue
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
COUNTS_ENV = "PIPELINE_BENCH_COUNTS"
PLURALS = {"Deployment": "deployments", "PropagationPolicy": "propagationpolicies"}
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
MEMBER_WRITES = ("POST", "PUT", "PATCH", "DELETE")
QUIET_SECONDS = 3.0
BENCH_DIR = str(Path(__file__).resolve().parent)


# -- inside each serve process -------------------------------------------------------------------------


@dataclass
class ControllerTally:
    """One controller's runs in one server process: how often, how many with work, its thread CPU."""

    runs: int = 0
    busy_runs: int = 0
    processed: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0


class ProcessCounters:
    """SQL statements and transactions per label (the controller running, or api/lease/other), and the
    controllers' runs; written as JSON to a file that the benchmark reads, twice a second and at exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._local = threading.local()
        self.statements: dict[str, dict[str, int]] = {}
        self.commits: dict[str, int] = {}
        self.rollbacks: dict[str, int] = {}
        self.controllers: dict[str, ControllerTally] = {}

    def label(self) -> str:
        phase: str | None = getattr(self._local, "phase", None)
        if phase:
            return phase
        name = threading.current_thread().name
        if name == "MainThread" or name.startswith("AnyIO worker"):
            return "api"
        return "other:" + name.rstrip("0123456789_-")

    def on_statement(self, *event: Any) -> None:
        statement: str = event[2]
        text = statement.lstrip()
        verb = text.split(None, 1)[0].upper() if text else "?"
        if verb == "WITH":
            upper = text.upper()
            verb = "WITH-WRITE" if any(f" {w} " in upper for w in ("INSERT", "UPDATE", "DELETE")) else "WITH"
        label = self.label()
        with self._lock:
            verbs = self.statements.setdefault(label, {})
            verbs[verb] = verbs.get(verb, 0) + 1

    def on_commit(self, *_: Any) -> None:
        self._add(self.commits)

    def on_rollback(self, *_: Any) -> None:
        self._add(self.rollbacks)

    def _add(self, counts: dict[str, int]) -> None:
        label = self.label()
        with self._lock:
            counts[label] = counts.get(label, 0) + 1

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        previous = getattr(self._local, "phase", None)
        self._local.phase = name
        try:
            yield
        finally:
            self._local.phase = previous

    def record_run(self, name: str, processed: int | None, cpu: float, wall: float) -> None:
        with self._lock:
            tally = self.controllers.setdefault(name, ControllerTally())
            tally.runs += 1
            tally.busy_runs += 1 if processed else 0
            tally.processed += processed or 0
            tally.cpu_s += cpu
            tally.wall_s += wall

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pid": os.getpid(),
                "statements": {k: dict(v) for k, v in self.statements.items()},
                "commits": dict(self.commits),
                "rollbacks": dict(self.rollbacks),
                "controllers": {k: vars(v).copy() for k, v in self.controllers.items()},
            }

    def dump(self) -> None:
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(json.dumps(self.snapshot()))
        os.replace(scratch, self.path)

    def dump_every(self, seconds: float) -> None:
        while True:
            time.sleep(seconds)
            self.dump()


class _TrackedReconciler:
    """A reconciler as the runner sees it, whose ``reconcile`` also reports its outcome and CPU."""

    def __init__(self, inner: Any, counters: ProcessCounters) -> None:
        self._inner = inner
        self._counters = counters
        self.name: str = inner.name
        self.interval_seconds: float = inner.interval_seconds
        self.watches: frozenset[str] = inner.watches

    def reconcile(self) -> Any:
        cpu, wall = time.thread_time(), time.perf_counter()
        processed: int | None = None
        try:
            with self._counters.phase(self.name):
                outcome = self._inner.reconcile()
            processed = int(outcome.processed)
            return outcome
        finally:
            self._counters.record_run(
                self.name, processed, time.thread_time() - cpu, time.perf_counter() - wall
            )


def _install(counters: ProcessCounters) -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from federation.controllers import runtime

    event.listen(Engine, "before_cursor_execute", counters.on_statement)
    event.listen(Engine, "commit", counters.on_commit)
    event.listen(Engine, "rollback", counters.on_rollback)
    runner: Any = runtime.ControllerRunner
    run = runner._run

    def tracked_run(self: Any, reconciler: Any) -> None:
        run(self, _TrackedReconciler(reconciler, counters))

    runner._run = tracked_run
    for method, label in (("_hold_lease", "lease"), ("_renew_claims", "claim-renewal")):
        original = getattr(runner, method, None)
        if original is not None:
            setattr(runner, method, _labelled(original, label, counters))


def _labelled(method: Callable[..., Any], label: str, counters: ProcessCounters) -> Callable[..., Any]:
    def wrapper(self: Any, *args: Any) -> Any:
        with counters.phase(label):
            return method(self, *args)

    return wrapper


def instrumented_serve() -> None:
    """``python -m federation`` (argv as given) with the counters installed; the subprocess entry point."""
    counters = ProcessCounters(Path(os.environ[COUNTS_ENV]))
    _install(counters)
    threading.Thread(target=counters.dump_every, args=(0.5,), name="bench-counters", daemon=True).start()
    atexit.register(counters.dump)
    runpy.run_module("federation", run_name="__main__", alter_sys=True)


# -- member clusters, counting the requests they answer -------------------------------------------------


_API_PREFIX = re.compile(r"^/(api/v1|apis/[^/]+/[^/]+)(/.*)?$")


def request_shape(method: str, path: str) -> str:
    """``GET /apis/apps/v1/namespaces/*/deployments/*``: the method and path with names starred."""
    match = _API_PREFIX.match(path)
    if match is None:
        return f"{method} {path}"
    parts = [p for p in (match.group(2) or "").split("/") if p]
    shaped: list[str] = []
    if len(parts) >= 2 and parts[0] == "namespaces":
        shaped += ["namespaces", "*"]
        parts = parts[2:]
    if parts:
        shaped.append(parts[0])
    if len(parts) > 1:
        shaped.append("*")
    shaped += parts[2:]
    return f"{method} /{match.group(1)}/{'/'.join(shaped)}".rstrip("/")


class RequestCounter:
    """Requests answered by the members, by shape, and the seconds the members took to answer them (in
    their app, lock waits included); shared by every member's ASGI wrapper."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.seconds: dict[str, float] = {}

    def add(self, shape: str, seconds: float) -> None:
        with self._lock:
            self.counts[shape] = self.counts.get(shape, 0) + 1
            self.seconds[shape] = self.seconds.get(shape, 0.0) + seconds

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)

    def seconds_snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self.seconds)


class CountingApp:
    """An ASGI app that counts each HTTP request, then hands it to the member's own app."""

    def __init__(self, app: Any, counter: RequestCounter) -> None:
        self.app = app
        self.counter = counter

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.counter.add(request_shape(scope["method"], scope["path"]), time.perf_counter() - start)


def member_main() -> None:
    """Entry point of a member subprocess: ``NAME NODES NODE_PODS DIR``. One simulator (TLS, as the tests
    run them) whose app is wrapped by a request counter; it writes ``DIR/NAME.kubeconfig.json`` once it
    serves and ``DIR/NAME.counts.json`` twice a second."""
    from federation.sim import Simulator, SimulatorConfig

    name, nodes, node_pods, directory = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    config = SimulatorConfig(name=name, nodes=nodes, node_cpu="64", node_pods=node_pods, ready_delay=0.2)
    sim = Simulator(config)
    counter = RequestCounter()
    sim.server.config.app = CountingApp(sim.server.config.app, counter)

    def publish() -> None:
        while not sim.server.started:
            time.sleep(0.01)
        _write_json(directory / f"{name}.kubeconfig.json", sim.kubeconfig)
        while True:
            _write_json(
                directory / f"{name}.counts.json",
                {"counts": counter.snapshot(), "seconds": counter.seconds_snapshot()},
            )
            time.sleep(0.5)

    threading.Thread(target=publish, name="bench-publish", daemon=True).start()
    sim.serve_forever()


def _write_json(path: Path, value: Any) -> None:
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(value))
    os.replace(scratch, path)


class Member:
    """One member cluster: a simulator in a process of its own (three in this process would share one
    GIL with the client threads, and their LISTs would starve each other's applies)."""

    def __init__(self, name: str, pods: int, directory: Path) -> None:
        self.name = name
        self.directory = directory
        node_pods = 250
        nodes = max(2, math.ceil(pods * 1.5 / node_pods))  # room for half as many pods again
        code = f"import sys; sys.path.insert(0, {BENCH_DIR!r}); import pipeline; pipeline.member_main()"
        command = [sys.executable, "-c", code, name, str(nodes), str(node_pods), str(directory)]
        self.log_path = directory / f"{name}.log"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def kubeconfig(self) -> dict[str, Any]:
        path = self.directory / f"{self.name}.kubeconfig.json"

        def written() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"member {self.name} exited: {self.log_path.read_text()[-2000:]}")
            return path.exists()

        wait_for(written, 30, f"member {self.name} to serve")
        return dict(json.loads(path.read_text()))

    def counts(self) -> tuple[dict[str, int], dict[str, float]]:
        try:
            found = json.loads((self.directory / f"{self.name}.counts.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}, {}
        return dict(found["counts"]), dict(found["seconds"])

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# -- databases ------------------------------------------------------------------------------------------


def _admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True)


@contextlib.contextmanager
def fresh_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A new database on the admin URL's server, dropped (connections forced off) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with _admin(admin_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with _admin(admin_url) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_url(admin_url: str, name: str, driver: str = "") -> str:
    base = admin_url.rpartition("/")[0]
    return f"{base.replace('postgresql://', f'postgresql{driver}://', 1)}/{name}"


def pgbench_tps(args: argparse.Namespace) -> dict[str, Any]:
    """``pgbench -N`` (simple-update: one-row writes, one transaction each) on a scratch database."""
    binary = shutil.which("pgbench") or next(
        iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))), None
    )
    if binary is None:
        raise SystemExit("pgbench not found (PATH or /usr/lib/postgresql/*/bin)")
    with fresh_database(args.pg_admin_url, "bench_pgbench") as name:
        url = database_url(args.pg_admin_url, name)
        subprocess.run([str(binary), "-i", "-q", "-s", "1", url], check=True, capture_output=True)
        clients = str(args.pgbench_clients)
        command = [str(binary), "-N", "-c", clients, "-j", clients, "-T", str(args.pgbench_seconds), url]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
    found = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", done.stdout)
    if found is None:
        raise SystemExit(f"pgbench printed no tps:\n{done.stdout}\n{done.stderr}")
    return {"tps": round(float(found.group(1)), 1), "command": " ".join([*command[:-1], "<scratch db>"])}


@dataclass(frozen=True, slots=True)
class DbStats:
    """pg_stat_database counters of one database (flushed by each backend at most ~1 s late)."""

    transactions: int
    rows_written: int
    rows_read: int

    def minus(self, other: DbStats) -> DbStats:
        return DbStats(
            self.transactions - other.transactions,
            self.rows_written - other.rows_written,
            self.rows_read - other.rows_read,
        )


def db_stats(admin_url: str, name: str) -> DbStats:
    query = (
        "SELECT xact_commit + xact_rollback, tup_inserted + tup_updated + tup_deleted,"
        " tup_returned + tup_fetched FROM pg_stat_database WHERE datname = %s"
    )
    with _admin(admin_url) as conn:
        row = conn.execute(query, (name,)).fetchone()
    assert row is not None
    return DbStats(int(row[0]), int(row[1]), int(row[2]))


# -- progress, read from the database --------------------------------------------------------------------

PROGRESS = """
SELECT
  (SELECT count(*) FROM resource_bindings),
  (SELECT count(*) FROM resource_bindings b WHERE NOT b.needs_scheduling
     AND EXISTS (SELECT 1 FROM binding_target_clusters t WHERE t.binding_id = b.id)),
  (SELECT count(*) FROM works WHERE binding_id IS NOT NULL),
  (SELECT count(*) FROM works WHERE binding_id IS NOT NULL AND applied),
  (SELECT count(*) FROM resource_bindings
     WHERE status -> 'conditions' @> '[{"type": "FullyApplied", "status": "True"}]')
"""
MILESTONES = ("bindings", "scheduled", "works", "applied", "fully_applied")


class Progress:
    """Polls the benchmark database and remembers when each count first reached its goal."""

    def __init__(self, url: str, goals: dict[str, int], t0: float, interval: float) -> None:
        self.url, self.goals, self.t0, self.interval = url, goals, t0, interval
        self.reached: dict[str, float] = {}
        self.latest: dict[str, int] = dict.fromkeys(MILESTONES, 0)
        self.polls = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def done(self) -> bool:
        return all(name in self.reached for name in self.goals)

    def _loop(self) -> None:
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                while not self._stop.is_set():
                    row = conn.execute(PROGRESS).fetchone()
                    self.polls += 1
                    now = time.perf_counter() - self.t0
                    assert row is not None
                    self.latest = dict(zip(MILESTONES, (int(v) for v in row), strict=True))
                    for name, goal in self.goals.items():
                        if name not in self.reached and self.latest[name] >= goal:
                            self.reached[name] = now
                    if self.done():
                        return
                    self._stop.wait(self.interval)
        except BaseException as exc:  # reported by the waiter, not lost in a thread
            self.error = exc


# -- the server processes ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (``/proc/<pid>/stat`` utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Replica:
    """One ``federation serve`` process: plain HTTP on its own port, its own data directory and log."""

    def __init__(self, workdir: Path, index: int, env: dict[str, str]) -> None:
        self.index = index
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = workdir / f"serve{index}"
        self.env = {**env, "FEDERATION_API__PORT": str(self.port)}
        self.log_path = workdir / f"serve{index}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def counts_path(self) -> Path:
        return self.data_dir.parent / f"serve{self.index}.start{self.starts}.counts.json"

    def start(self) -> None:
        self.starts += 1
        env = {**self.env, COUNTS_ENV: str(self.counts_path)}
        bench_dir = str(Path(__file__).resolve().parent)
        code = (
            f"import sys; sys.path.insert(0, {bench_dir!r}); import pipeline; pipeline.instrumented_serve()"
        )
        command = [sys.executable, "-c", code, "serve", "--data-dir", str(self.data_dir)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        if not self.alive():
            raise RuntimeError(f"serve{self.index} exited; its log:\n{self.log_tail()}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def admin_token(self) -> str:
        import yaml

        config = yaml.safe_load((self.data_dir / "federation.kubeconfig").read_text())
        return str(config["users"][0]["user"]["token"])

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.pid)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def counts(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.counts_path.read_text()))
        except (FileNotFoundError, json.JSONDecodeError):
            return {"statements": {}, "commits": {}, "rollbacks": {}, "controllers": {}}

    def stop(self, timeout: float, sig: signal.Signals = signal.SIGTERM) -> float | None:
        """``sig``, then SIGKILL after ``timeout``; seconds to the exit (None: it had to be killed)."""
        if not self.alive():
            return 0.0
        assert self.process is not None
        start = time.perf_counter()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
            return round(time.perf_counter() - start, 2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> float:
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > timeout:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
    return time.perf_counter() - start


# -- objects ----------------------------------------------------------------------------------------------


def namespaces(count: int) -> list[str]:
    return ["default"] if count <= 1 else [f"bench{i:03d}" for i in range(count)]


def object_path(body: dict[str, Any]) -> str:
    meta = body["metadata"]
    prefix = "/apis/" + body["apiVersion"]
    return f"{prefix}/namespaces/{meta['namespace']}/{PLURALS[body['kind']]}/{meta['name']}"


def deployment(name: str, namespace: str, replicas: int) -> dict[str, Any]:
    requests = {"cpu": "10m", "memory": "16Mi"}
    container = {"name": "app", "image": "nginx", "resources": {"requests": requests}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def divided_policy(namespace: str, clusters: list[str]) -> dict[str, Any]:
    weights = [{"targetCluster": {"clusterNames": [name]}, "weight": 1} for name in clusters]
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "bench-pipeline", "namespace": namespace},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {
                "clusterAffinity": {"clusterNames": clusters},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": weights},
                },
            },
        },
    }


def cluster_ready(http: httpx.Client, name: str) -> bool:
    answer = http.get(f"{CLUSTERS}/{name}")
    if answer.status_code != 200:
        return False
    status = answer.json().get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])
    return ready and bool(status.get("resourceSummary"))


# -- writing through the API ------------------------------------------------------------------------------


@dataclass
class Writes:
    latencies_ms: list[float] = field(default_factory=list)
    retried: int = 0
    started: float = 0.0
    finished: float = 0.0


def put(http: httpx.Client, body: dict[str, Any]) -> int:
    """PUT, retried on transport errors and 5xx (counted); the number of retries."""
    for attempt in range(5):
        try:
            answer = http.put(object_path(body), json=body)
        except httpx.TransportError:
            if attempt == 4:
                raise
            continue
        if answer.status_code in (200, 201):
            return attempt
        if answer.status_code < 500 or attempt == 4:
            raise RuntimeError(f"PUT {body['metadata']['name']}: {answer.status_code} {answer.text[:300]}")
    raise AssertionError("unreachable")


def write_all(urls: list[str], token: str, bodies: list[dict[str, Any]], writers: int) -> Writes:
    """PUT every Deployment from ``writers`` threads, thread i talking to replica i mod R (keep-alive)."""
    work: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
    for body in bodies:
        work.put(body)
    result = Writes()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=urls[index % len(urls)], headers=headers, timeout=120) as http:
            while not errors:
                try:
                    body = work.get_nowait()
                except queue.Empty:
                    return
                start = time.perf_counter()
                try:
                    retried = put(http, body)
                except BaseException as exc:
                    errors.append(exc)
                    return
                elapsed = (time.perf_counter() - start) * 1000
                with lock:
                    result.latencies_ms.append(elapsed)
                    result.retried += retried

    threads = [threading.Thread(target=writer, args=(i,), name=f"writer{i}") for i in range(writers)]
    result.started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.finished = time.perf_counter()
    if errors:
        raise errors[0]
    return result


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# -- adding up counters -----------------------------------------------------------------------------------


def statement_totals(snapshots: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """label → verb → statements, summed over the server processes."""
    totals: dict[str, dict[str, int]] = {}
    for snapshot in snapshots:
        for label, verbs in snapshot["statements"].items():
            into = totals.setdefault(label, {})
            for verb, count in verbs.items():
                into[verb] = into.get(verb, 0) + count
    return totals


def diff_nested(
    after: dict[str, dict[str, int]], before: dict[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for label, verbs in after.items():
        for verb, count in verbs.items():
            delta = count - before.get(label, {}).get(verb, 0)
            if delta:
                out.setdefault(label, {})[verb] = delta
    return out


def diff_flat(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def statements_by_label(nested: dict[str, dict[str, int]]) -> dict[str, int]:
    counted = {
        label: sum(n for verb, n in verbs.items() if verb not in TRANSACTION_CONTROL)
        for label, verbs in nested.items()
    }
    return dict(sorted(((k, v) for k, v in counted.items() if v), key=lambda kv: -kv[1]))


def controller_totals(snapshots: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    totals: dict[str, dict[str, float]] = {}
    for snapshot in snapshots:
        for name, tally in snapshot["controllers"].items():
            into = totals.setdefault(name, {})
            for key, value in tally.items():
                into[key] = into.get(key, 0) + value
    return totals


def diff_controllers(
    after: dict[str, dict[str, float]], before: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, tally in after.items():
        delta = {k: round(v - before.get(name, {}).get(k, 0), 3) for k, v in tally.items()}
        if delta.get("runs"):
            out[name] = delta
    return dict(sorted(out.items(), key=lambda kv: -kv[1].get("cpu_s", 0)))


@dataclass
class Sample:
    """Everything counted at one moment: server CPU, pg_stat_database, statements, member calls."""

    at: float
    cpu: list[float]
    db: DbStats
    statements: dict[str, dict[str, int]]
    commits: dict[str, int]
    controllers: dict[str, dict[str, float]]
    member_calls: dict[str, int]
    member_seconds: dict[str, float]
    own_cpu: float  # this process: the client threads and the progress poller
    members_cpu: float


class Meter:
    def __init__(self, bench: Bench) -> None:
        self.bench = bench

    def sample(self) -> Sample:
        bench = self.bench
        snapshots = [r.counts() for r in bench.replicas]
        calls: dict[str, int] = {}
        seconds: dict[str, float] = {}
        for member in bench.members:
            counts, times = member.counts()
            for shape, n in counts.items():
                calls[shape] = calls.get(shape, 0) + n
                seconds[shape] = seconds.get(shape, 0.0) + times.get(shape, 0.0)
        commits: dict[str, int] = {}
        for snapshot in snapshots:
            for label, n in snapshot["commits"].items():
                commits[label] = commits.get(label, 0) + n
        return Sample(
            time.perf_counter(),
            [r.cpu_seconds() for r in bench.replicas],
            db_stats(bench.args.pg_admin_url, bench.db_name),
            statement_totals(snapshots),
            commits,
            controller_totals(snapshots),
            calls,
            seconds,
            time.process_time(),
            sum(member.cpu_seconds() for member in bench.members),
        )


def between(before: Sample, after: Sample) -> dict[str, Any]:
    seconds = after.at - before.at
    statements = diff_nested(after.statements, before.statements)
    calls = diff_flat(after.member_calls, before.member_calls)
    member_seconds = {k: v - before.member_seconds.get(k, 0.0) for k, v in after.member_seconds.items()}
    cpu = [a - b for a, b in zip(after.cpu, before.cpu, strict=True)]
    return {
        "seconds": seconds,
        "cpu_s": sum(cpu),
        "cpu_s_per_replica": [round(c, 2) for c in cpu],
        "bench_process_cpu_s": round(after.own_cpu - before.own_cpu, 2),
        "members_cpu_s": round(after.members_cpu - before.members_cpu, 2),
        "db": after.db.minus(before.db),
        "statements": sum(statements_by_label(statements).values()),
        "statements_by_label": statements_by_label(statements),
        "statements_by_verb": _by_verb(statements),
        "commits_by_label": diff_flat(after.commits, before.commits),
        "member_calls": sum(calls.values()),
        "member_calls_by_shape": dict(sorted(calls.items(), key=lambda kv: -kv[1])),
        "member_mean_ms_by_shape": {k: round(1000 * member_seconds[k] / n, 1) for k, n in calls.items()},
        "member_writes": sum(n for shape, n in calls.items() if shape.split(" ", 1)[0] in MEMBER_WRITES),
        "controllers": diff_controllers(after.controllers, before.controllers),
    }


def _by_verb(nested: dict[str, dict[str, int]]) -> dict[str, int]:
    verbs: dict[str, int] = {}
    for counts in nested.values():
        for verb, n in counts.items():
            verbs[verb] = verbs.get(verb, 0) + n
    return dict(sorted(verbs.items(), key=lambda kv: -kv[1]))


# -- the run ----------------------------------------------------------------------------------------------


class Bench:
    def __init__(
        self, args: argparse.Namespace, db_name: str, workdir: Path, pgbench: dict[str, Any]
    ) -> None:
        self.args = args
        self.pgbench = pgbench
        self.db_name = db_name
        self.workdir = workdir
        self.names = [f"member{i + 1}" for i in range(args.clusters)]
        self.members: list[Member] = []
        self.replicas: list[Replica] = []
        self.token = ""
        self.meter = Meter(self)

    # -- start and stop ----------------------------------------------------------------------------------

    def server_env(self) -> dict[str, str]:
        from federation.store.crypto import generate_key

        env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
        env.update(
            {
                "FEDERATION_DATABASE_URL": database_url(self.args.pg_admin_url, self.db_name, "+psycopg"),
                "FEDERATION_SECRETS__ENCRYPTION_KEY": generate_key().decode(),
                "FEDERATION_API__INSECURE_HTTP": "true",
            }
        )
        for setting in self.args.interval:
            name, _, seconds = setting.partition("=")
            env[f"FEDERATION_CONTROLLERS__{name.upper()}_INTERVAL_SECONDS"] = seconds
        return env

    def start_servers(self) -> None:
        env = self.server_env()
        self.replicas = [Replica(self.workdir, i, env) for i in range(self.args.replicas_of_serve)]
        # The first migrates the database and creates the admin token; the others start on it.
        self.replicas[0].start()
        wait_for(self.replicas[0].ready, 120, "serve0 /readyz")
        self.token = self.replicas[0].admin_token()
        for replica in self.replicas[1:]:
            replica.start()
        for replica in self.replicas[1:]:
            wait_for(replica.ready, 120, f"serve{replica.index} /readyz")

    def start_members(self) -> None:
        per_member = self.args.bindings * self.args.replicas // self.args.clusters + 1
        for name in self.names:
            self.members.append(Member(name, per_member, self.workdir))
        with self.client(self.replicas[0]) as http:
            for member in self.members:
                body = {"name": member.name, "syncMode": "Push", "kubeconfig": member.kubeconfig()}
                answer = http.post("/federation/v1/clusters/join", json=body)
                if answer.status_code != 201:
                    raise RuntimeError(f"join {member.name}: {answer.status_code} {answer.text[:300]}")
            for name in self.names:
                wait_for(functools.partial(cluster_ready, http, name), 120, f"{name} Ready", 0.5)

    def client(self, replica: Replica) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=replica.url, headers=headers, timeout=60)

    def stop_servers(self) -> list[float | None]:
        sig = signal.Signals[f"SIG{self.args.stop_signal}"]
        return [r.stop(self.args.stop_timeout, sig) for r in self.replicas]

    def close(self) -> None:
        try:
            for replica in self.replicas:
                replica.stop(self.args.stop_timeout)
        finally:
            for member in self.members:
                member.stop()

    # -- phases ------------------------------------------------------------------------------------------

    def pipeline(self) -> dict[str, Any]:
        args = self.args
        per_binding = min(args.replicas, args.clusters)
        goals = {
            "bindings": args.bindings,
            "scheduled": args.bindings,
            "works": args.bindings * per_binding,
            "applied": args.bindings * per_binding,
            "fully_applied": args.bindings,
        }
        spaces = namespaces(args.namespaces)
        bodies = [
            deployment(f"app{i:05d}", spaces[i % len(spaces)], args.replicas) for i in range(args.bindings)
        ]
        rss_before = [r.rss_mb() for r in self.replicas]
        before = self.meter.sample()
        t0 = time.perf_counter()
        progress = Progress(database_url(args.pg_admin_url, self.db_name), goals, t0, args.poll_seconds)
        with self.client(self.replicas[0]) as http:
            for namespace in namespaces(args.namespaces):
                put(http, divided_policy(namespace, self.names))
        progress.start()
        try:
            writes = write_all([r.url for r in self.replicas], self.token, bodies, args.writers)
            at_writes_end = dict(progress.latest)
            deadline = time.perf_counter() + args.timeout
            while not progress.done() and progress.error is None and time.perf_counter() < deadline:
                time.sleep(0.1)
            if progress.error is not None:
                raise progress.error
        finally:
            progress.stop()
        applied = self.meter.sample()
        window = between(before, applied)
        writes_end = writes.finished - t0
        return {
            "timed_out": not progress.done(),
            "latest": progress.latest,
            "goals": goals,
            "reached": {k: round(v, 2) for k, v in progress.reached.items()},
            "writes": writes,
            "writes_end": writes_end,
            "at_writes_end": at_writes_end,
            "window": window,
            "polls": progress.polls,
            "rss_before": rss_before,
        }

    def idle(self) -> dict[str, Any]:
        time.sleep(self.args.settle)
        before = self.meter.sample()
        time.sleep(self.args.idle_seconds)
        after = self.meter.sample()
        return between(before, after)

    def cold_start(self, idle: dict[str, Any]) -> dict[str, Any]:
        """Stop every server, start them all at once, and time until they are ready and idle."""
        stopped = self.stop_servers()
        seconds = idle["seconds"]
        cpu, rows = 100 * idle["cpu_s"] / seconds, idle["db"].rows_written / seconds
        # The controllers that ran more than once in the idle window must have run since the restart.
        frequent = {name for name, tally in idle["controllers"].items() if tally["runs"] >= 2}
        limits = (max(1.5 * cpu, cpu + 10), max(1.5 * rows, rows + 5))
        watch = ColdStart(time.perf_counter(), *limits, frequent)
        for replica in self.replicas:
            replica.start()
        while time.perf_counter() < watch.start + self.args.timeout and watch.quiet_from is None:
            ready = watch.ready_at is not None or all(r.ready() for r in self.replicas)
            watch.add(self.meter.sample(), ready)
            time.sleep(0.25)
        return watch.result(stopped, [round(r.rss_mb(), 1) for r in self.replicas])


@dataclass
class ColdStart:
    """Samples after a restart. Idle once every replica is ready, the frequent controllers have each run,
    and then for ``QUIET_SECONDS`` the members got no write and the servers stayed at the idle level:
    CPU (percent of one core) and rows written per second within the limits."""

    start: float
    cpu_limit: float
    rows_limit: float
    frequent: set[str]
    history: list[Sample] = field(default_factory=list)
    ready_at: float | None = None
    controllers_at: float | None = None
    quiet_from: float | None = None

    def add(self, sample: Sample, ready: bool) -> None:
        if ready and self.ready_at is None:
            self.ready_at = sample.at
        if self.controllers_at is None and all(
            sample.controllers.get(n, {}).get("runs") for n in self.frequent
        ):
            self.controllers_at = sample.at
        self.history.append(sample)
        self.quiet_from = self._quiet_since()

    def _quiet_since(self) -> float | None:
        if self.ready_at is None or self.controllers_at is None or len(self.history) < 2:
            return None
        last = self.history[-1]
        first = next(s for s in self.history if s.at >= last.at - QUIET_SECONDS)
        begins = max(self.ready_at, self.controllers_at)
        if first is last or first.at < begins or last.at - first.at < QUIET_SECONDS * 0.9:
            return None
        window = between(first, last)
        cpu_percent = 100 * window["cpu_s"] / window["seconds"]
        rows = window["db"].rows_written / window["seconds"]
        if window["member_writes"] or cpu_percent > self.cpu_limit or rows > self.rows_limit:
            return None
        return first.at

    def since_start(self, at: float | None) -> float | None:
        return None if at is None else round(at - self.start, 2)

    def timeline(self) -> list[list[float]]:
        """Per second after the start: [second, server CPU % of a core, statements, rows written,
        member calls] in that second."""
        rows: list[list[float]] = []
        previous = self.history[0]
        for sample in self.history[1:]:
            if sample.at - previous.at >= 1.0 or sample is self.history[-1]:
                window = between(previous, sample)
                rows.append(
                    [
                        round(sample.at - self.start, 1),
                        round(100 * window["cpu_s"] / window["seconds"], 1),
                        window["statements"],
                        window["db"].rows_written,
                        window["member_calls"],
                    ]
                )
                previous = sample
        return rows

    def result(self, stopped: list[float | None], rss: list[float]) -> dict[str, Any]:
        total = between(self.history[0], self.history[-1]) if len(self.history) > 1 else None
        return {
            "stop_seconds": stopped,
            "seconds": self.since_start(self.quiet_from),
            "ready_seconds": self.since_start(self.ready_at),
            "controllers_ran_seconds": self.since_start(self.controllers_at),
            "cpu_limit_percent": round(self.cpu_limit, 1),
            "rows_written_limit_per_s": round(self.rows_limit, 1),
            "rss_mb": rss,
            "window": total,
            "timeline": self.timeline(),
        }


def _rate(count: float, seconds: float | None) -> float | None:
    return None if not seconds else round(count / seconds, 1)


def pipeline_figures(bench: Bench, run: dict[str, Any]) -> dict[str, Any]:
    """The figures of the timed part: writes, milestones, and per binding over the window."""
    args = bench.args
    writes: Writes = run["writes"]
    reached, goals, window = run["reached"], run["goals"], run["window"]
    n = args.bindings
    write_seconds = writes.finished - writes.started
    db: DbStats = window["db"]
    scheduled = reached.get("scheduled")
    scheduled_after_writes = goals["scheduled"] - run["at_writes_end"]["scheduled"]
    after_writes = None
    if scheduled is not None and scheduled_after_writes > 0 and scheduled > run["writes_end"]:
        after_writes = _rate(scheduled_after_writes, scheduled - run["writes_end"])
    return {
        "bindings": n,
        "clusters": args.clusters,
        "replicas_of_serve": args.replicas_of_serve,
        "replicas_per_deployment": args.replicas,
        "writers": args.writers,
        "namespaces": args.namespaces,
        "timed_out": run["timed_out"],
        "api_writes_per_s": _rate(n, write_seconds),
        "api_write_p50_ms": round(percentile(writes.latencies_ms, 0.50), 1),
        "api_write_p99_ms": round(percentile(writes.latencies_ms, 0.99), 1),
        "api_write_retries": writes.retried,
        "scheduled_per_s": _rate(n, scheduled),
        "scheduled_per_s_after_writes": after_writes,
        "works_per_s": _rate(goals["works"], reached.get("works")),
        "seconds_to_all_applied": reached.get("applied"),
        "seconds_to_all_fully_applied": reached.get("fully_applied"),
        "seconds_to_milestones": reached,
        "counts_at_the_end": run["latest"],
        "api_writes_seconds": round(write_seconds, 2),
        "pgbench_tps": bench.pgbench["tps"],
        "pgbench_command": bench.pgbench["command"],
        "per_binding": {
            "sql_statements": round(window["statements"] / n, 1),
            "sql_transactions": round((db.transactions - run["polls"]) / n, 1),
            "rows_written": round(db.rows_written / n, 1),
            "member_calls": round(window["member_calls"] / n, 2),
            "server_cpu_ms": round(1000 * window["cpu_s"] / n, 1),
            "window": "first write → every binding FullyApplied (or the timeout)",
        },
        "statements_by_label": window["statements_by_label"],
        "statements_by_verb": window["statements_by_verb"],
        "commits_by_label": window["commits_by_label"],
        "member_calls_by_shape": window["member_calls_by_shape"],
        "member_mean_ms_by_shape": window["member_mean_ms_by_shape"],
        "controllers": window["controllers"],
        "server_cpu_s_per_replica": window["cpu_s_per_replica"],
        "members_cpu_s": window["members_cpu_s"],
        "bench_process_cpu_s": window["bench_process_cpu_s"],
    }


def idle_figures(
    run: dict[str, Any], idle: dict[str, Any] | None, cold: dict[str, Any] | None
) -> dict[str, Any]:
    """Idle, memory and cold start (None when the pipeline did not converge)."""
    if idle is None or cold is None:
        names = ("rss_mb_per_10k_bindings", "idle_cpu_percent", "idle_queries_per_s", "cold_start_seconds")
        return dict.fromkeys(names)
    seconds = idle["seconds"]
    growth = [a - b for a, b in zip(run["rss_after"], run["rss_before"], strict=True)]
    window = cold["window"]
    return {
        "rss_mb_per_10k_bindings": round(max(growth) * 10_000 / run["goals"]["bindings"], 1),
        "rss_mb": {
            "before_writes": [round(v, 1) for v in run["rss_before"]],
            "after_idle": [round(v, 1) for v in run["rss_after"]],
            "after_cold_start": cold["rss_mb"],
        },
        "idle_cpu_percent": round(100 * idle["cpu_s"] / seconds, 1),
        "idle_cpu_percent_per_replica": [round(100 * c / seconds, 1) for c in idle["cpu_s_per_replica"]],
        "idle_queries_per_s": _rate(idle["db"].transactions, seconds),
        "idle_queries_are": "pg_stat_database xact_commit + xact_rollback of the benchmark database per s",
        "idle_statements_per_s": _rate(idle["statements"], seconds),
        "idle_rows_written_per_s": _rate(idle["db"].rows_written, seconds),
        "idle_member_calls_per_s": _rate(idle["member_calls"], seconds),
        "idle_members_cpu_percent": round(100 * idle["members_cpu_s"] / seconds, 1),
        "idle_statements_by_label": idle["statements_by_label"],
        "idle_member_calls_by_shape": idle["member_calls_by_shape"],
        "idle_controllers": idle["controllers"],
        "cold_start_seconds": cold["seconds"],
        "cold_start_ready_seconds": cold["ready_seconds"],
        "cold_start_controllers_ran_seconds": cold["controllers_ran_seconds"],
        "cold_start_member_calls": None if window is None else window["member_calls"],
        "cold_start_cpu_s": None if window is None else round(window["cpu_s"], 2),
        "cold_start_statements": None if window is None else window["statements"],
        "cold_start_statements_by_label": None if window is None else window["statements_by_label"],
        "cold_start_controllers": None if window is None else window["controllers"],
        "cold_start_timeline": cold["timeline"],
        "stop_seconds": cold["stop_seconds"],
    }


def environment(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    with _admin(args.pg_admin_url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "machine": " ".join(platform.uname()[i] for i in (0, 2, 4)),
        "cores": os.cpu_count(),
        "loadavg_at_start": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(),
        "postgres": row[0] if row else "?",
        "commit": commit.strip(),
        "uncommitted_changes": bool(dirty.strip()),
    }


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    env = environment(args)
    pgbench = pgbench_tps(args)
    with (
        fresh_database(args.pg_admin_url, "bench_pipeline") as db_name,
        tempfile.TemporaryDirectory(prefix="bench-pipeline-") as workdir,
    ):
        bench = Bench(args, db_name, Path(workdir), pgbench)
        try:
            bench.start_servers()
            bench.start_members()
            run = bench.pipeline()
            idle = cold = None
            if not run["timed_out"]:
                idle = bench.idle()
                run["rss_after"] = [r.rss_mb() for r in bench.replicas]
                cold = bench.cold_start(idle)
            result = {**pipeline_figures(bench, run), **idle_figures(run, idle, cold)}
        except BaseException:
            for replica in bench.replicas:
                print(f"--- serve{replica.index} log (tail)\n{replica.log_tail()}", file=sys.stderr)
            raise
        finally:
            bench.close()
            if args.keep_logs:
                Path(args.keep_logs).mkdir(parents=True, exist_ok=True)
                for log in Path(workdir).glob("*.log"):
                    shutil.copy(log, Path(args.keep_logs) / log.name)
    result["environment"] = env
    return result


def report(result: dict[str, Any]) -> str:
    keys = (
        "api_writes_per_s",
        "api_write_p50_ms",
        "api_write_p99_ms",
        "scheduled_per_s",
        "works_per_s",
        "seconds_to_all_applied",
        "pgbench_tps",
        "rss_mb_per_10k_bindings",
        "idle_cpu_percent",
        "idle_queries_per_s",
        "cold_start_seconds",
    )
    lines = [
        f"{result['bindings']} bindings x {result['clusters']} clusters, {result['replicas_of_serve']} serve "
        f"replica(s), {result['writers']} writers"
    ]
    if result["timed_out"]:
        lines.append(f"  TIMED OUT: counts at the end {result['counts_at_the_end']}")
    lines += [f"  {key}: {result[key]}" for key in keys]
    lines.append(f"  per binding: {json.dumps(result['per_binding'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bindings", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=3)
    parser.add_argument("--replicas-of-serve", type=int, default=1)
    parser.add_argument("--replicas", type=int, help="replicas per Deployment (default: --clusters)")
    parser.add_argument("--writers", type=int, default=8, help="client threads writing the Deployments")
    parser.add_argument(
        "--namespaces",
        type=int,
        help="spread the Deployments over this many namespaces, one PropagationPolicy each (default: one "
        "per 20 Deployments; 1: all in `default`). The simulator renders a workload's status from every "
        "pod of its namespace, so one namespace of 1,000 makes each member LIST longer than 10 s",
    )
    parser.add_argument(
        "--interval",
        action="append",
        default=[],
        metavar="CONTROLLER=SECONDS",
        help="a controller interval other than the default (the controllers settings' names without "
        "_interval_seconds: scheduler, execution, work_sync, detector, status), e.g. scheduler=0.2",
    )
    parser.add_argument("--settle", type=float, default=10.0, help="seconds after convergence before idle")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="for convergence and the cold start")
    parser.add_argument("--stop-timeout", type=float, default=120.0, help="stop signal → SIGKILL")
    parser.add_argument(
        "--stop-signal",
        choices=("TERM", "INT"),
        default="TERM",
        help="how the cold start stops the servers (TERM: as docker and Kubernetes do)",
    )
    parser.add_argument("--poll-seconds", type=float, default=0.5)
    parser.add_argument("--pgbench-seconds", type=int, default=10)
    parser.add_argument("--pgbench-clients", type=int, default=2)
    parser.add_argument(
        "--pg-admin-url",
        default=os.environ.get("FEDERATION_BENCH_PG_ADMIN_URL", PG_ADMIN_URL).replace("+psycopg", ""),
        help="where the benchmark and scratch databases are created and dropped",
    )
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the servers' and members' logs here")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    args.replicas = args.replicas or args.clusters
    args.namespaces = args.namespaces or max(1, args.bindings // 20)
    result = run_bench(args)
    print(json.dumps(result) if args.json else report(result), flush=True)
    if result["timed_out"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
