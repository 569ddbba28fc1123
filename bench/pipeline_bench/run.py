"""One benchmark run: the set-up (pgbench, databases, servers, members joined), then the phases in order:
the timed pipeline, idle, cold start."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from .cold_start import ColdStart
from .database import admin_connection, database_url, fresh_database, pgbench_tps
from .figures import idle_figures, pipeline_figures
from .heap import HEAP_DIR_ENV, HEAP_FRAMES_ENV
from .leases import (
    MONITOR_GRACE_ENV,
    MONITOR_GRACE_SECONDS,
    LeaseLoad,
    LeaseRenewals,
    agent_names,
    join_agents,
    ready_agents,
)
from .members import Member
from .metering import Meter, between
from .processes import wait_for
from .progress import Progress
from .servers import NO_CONTROLLERS, Replica
from .workload import cluster_ready, deployment, divided_policy, namespaces, put, write_all


class Bench:
    def __init__(
        self, args: argparse.Namespace, db_name: str, workdir: Path, pgbench: dict[str, Any]
    ) -> None:
        self.args = args
        self.pgbench = pgbench
        self.db_name = db_name
        self.workdir = workdir
        self.names = [f"member{i + 1}" for i in range(args.clusters)]
        self.lease_agents = agent_names(args.lease_clusters)
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
        for setting in self.args.setting:
            name, _, value = setting.partition("=")
            env[f"FEDERATION_{name.upper()}"] = value
        if self.lease_agents:  # the agents stop with the timed phase (``leases``)
            env[MONITOR_GRACE_ENV] = str(MONITOR_GRACE_SECONDS)
        return env

    def start_servers(self) -> None:
        env = self.server_env()
        self.replicas = [Replica(self.workdir, f"serve{i}", env) for i in range(self.args.replicas_of_serve)]
        self.replicas += [
            Replica(self.workdir, f"api{i}", env, (NO_CONTROLLERS,)) for i in range(self.args.api_replicas)
        ]
        if self.args.heap_dir:  # measurement only: tracemalloc and heap reports (``heap``)
            for replica in self.replicas:
                replica.env[HEAP_DIR_ENV] = str(Path(self.args.heap_dir).resolve() / replica.name)
                replica.env[HEAP_FRAMES_ENV] = str(self.args.heap_frames)
        # The first migrates the database and creates the admin token; the others start on it.
        self.replicas[0].start()
        wait_for(self.replicas[0].ready, 120, "serve0 /readyz")
        self.token = self.replicas[0].admin_token()
        for replica in self.replicas[1:]:
            replica.start()
        for replica in self.replicas[1:]:
            wait_for(replica.ready, 120, f"{replica.name} /readyz")

    @property
    def api_targets(self) -> list[Replica]:
        """Where the clients (the writers, the lease agents) go: the API-only replicas when there are
        some, else every replica."""
        return [r for r in self.replicas if r.api_only] or self.replicas

    def start_members(self) -> None:
        per_member = self.args.bindings * self.args.replicas // self.args.clusters + 1
        for name in self.names:
            self.members.append(Member(name, per_member, self.workdir, self.args.member_latency_ms))
        with self.client(self.replicas[0]) as http:
            for member in self.members:
                body = {"name": member.name, "syncMode": "Push", "kubeconfig": member.kubeconfig()}
                answer = http.post("/federation/v1/clusters/join", json=body)
                if answer.status_code != 201:
                    raise RuntimeError(f"join {member.name}: {answer.status_code} {answer.text[:300]}")
            for name in self.names:
                wait_for(functools.partial(cluster_ready, http, name), 120, f"{name} Ready", 0.5)

    def start_lease_agents(self) -> None:
        """Set-up for the lease load: the agents' clusters joined, their leases renewed once, and every one
        published Ready (by the status controller's next pass) before the timed phase."""
        if not self.lease_agents:
            return
        count, db_url = len(self.lease_agents), database_url(self.args.pg_admin_url, self.db_name)
        with self.client(self.replicas[0]) as http:
            join_agents(http, self.lease_agents)
        wait_for(lambda: ready_agents(db_url) == count, 120, f"{count} lease agents' clusters Ready", 1.0)

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
        heap_before = [r.heap("before") for r in self.replicas]
        rss_before = [r.rss_by_process() for r in self.replicas]
        before = self.meter.sample()
        t0 = time.perf_counter()
        targets = [r.url for r in self.api_targets]
        lease_load: LeaseLoad | None = None
        renewals = LeaseRenewals()  # none without --lease-clusters
        if self.lease_agents:
            lease_load = LeaseLoad(
                targets, self.token, self.lease_agents, args.lease_interval, args.lease_threads
            )
            lease_load.start()
        progress = Progress(database_url(args.pg_admin_url, self.db_name), goals, t0, args.poll_seconds)
        with self.client(self.api_targets[0]) as http:  # the policies are API writes too
            for namespace in namespaces(args.namespaces):
                put(http, divided_policy(namespace, self.names))
        progress.start()
        try:
            writes = write_all(targets, self.token, bodies, args.writers)
            at_writes_end = dict(progress.latest)
            deadline = time.perf_counter() + args.timeout
            while not progress.done() and progress.error is None and time.perf_counter() < deadline:
                time.sleep(0.1)
            if progress.error is not None:
                raise progress.error
        finally:
            if lease_load is not None:  # before the idle window, which must see no renewal
                renewals = lease_load.stop()
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
            "lease_renewals": renewals,
            "writes_end": writes_end,
            "at_writes_end": at_writes_end,
            "window": window,
            "polls": progress.polls,
            "rss_before": rss_before,
            "heap_before": heap_before,
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
        return watch.result(stopped, [r.rss_by_process() for r in self.replicas])


def heap_figures(run: dict[str, Any]) -> dict[str, Any]:
    """What ``--heap-dir`` measured: each server's report before the writes and after the idle window, its
    controller process's nested (without the type counts, which stay in the reports' files)."""

    def without_types(report: dict[str, Any]) -> dict[str, Any]:
        return {
            k: without_types(v) if k == "controller_process" else v for k, v in report.items() if k != "types"
        }

    short = [
        [None if r is None else without_types(r) for r in run.get(key) or []]
        for key in ("heap_before", "heap_after")
    ]
    return {"before": short[0], "after": short[1]}


def _git(root: Path, *command: str) -> str:
    return subprocess.run(["git", *command], cwd=root, capture_output=True, text=True).stdout.strip()


def code_under_test() -> Path:
    """The tree whose ``federation`` the servers import (they inherit this process's ``PYTHONPATH``): an
    anchor run from another checkout names that checkout's commit, not this script's."""
    spec = importlib.util.find_spec("federation")
    origin = spec.origin if spec is not None else None
    return Path(origin).resolve().parents[1] if origin else Path(__file__).resolve().parents[2]


def environment(args: argparse.Namespace) -> dict[str, Any]:
    root = code_under_test()
    bench_root = Path(__file__).resolve().parents[2]  # the repository of this script
    commit, dirty = _git(root, "rev-parse", "HEAD"), _git(root, "status", "--porcelain")
    with admin_connection(args.pg_admin_url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        # Off on some development servers: the tables then bloat and never get statistics, which changes
        # every plan at 10,000 bindings (RESULTS.md, "The controllers in a process of their own").
        vacuum = conn.execute("SHOW autovacuum").fetchone()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "machine": " ".join(platform.uname()[i] for i in (0, 2, 4)),
        "cores": os.cpu_count(),
        "loadavg_at_start": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(),
        "postgres": row[0] if row else "?",
        "postgres_autovacuum": vacuum[0] if vacuum else "?",
        "commit": commit,
        "uncommitted_changes": bool(dirty),
        "code_root": str(root),
        "bench_commit": _git(bench_root, "rev-parse", "HEAD"),
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
            bench.start_lease_agents()
            run = bench.pipeline()
            idle = cold = None
            if not run["timed_out"]:
                idle = bench.idle()
                run["rss_after"] = [r.rss_by_process() for r in bench.replicas]
                run["heap_after"] = [r.heap("after", trim=True) for r in bench.replicas]
                cold = bench.cold_start(idle)
                cold["again"] = [bench.cold_start(idle) for _ in range(args.cold_starts - 1)]
            result = {**pipeline_figures(bench, run), **idle_figures(run, idle, cold)}
            if args.heap_dir:
                result["heap"] = heap_figures(run)
        except BaseException:
            for replica in bench.replicas:
                print(f"--- {replica.name} log (tail)\n{replica.log_tail()}", file=sys.stderr)
            raise
        finally:
            bench.close()
            if args.keep_logs:
                Path(args.keep_logs).mkdir(parents=True, exist_ok=True)
                for log in Path(workdir).glob("*.log"):
                    shutil.copy(log, Path(args.keep_logs) / log.name)
    result["environment"] = env
    return result
