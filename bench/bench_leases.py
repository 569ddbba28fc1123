"""Pull agents' lease renewals against one API-only replica (issue 12: the API under a fleet's heartbeats).

One command: ``bench/bench_leases.py [--clusters 200] [--threads 4] [--seconds 15] [--runs 2] [--json]``.

Set-up (not timed): a fresh Postgres database; one ``serve --no-controllers`` on it (plain HTTP, started
through the pipeline benchmark's instrumented entry, so its SQL statements are counted by label); N Pull
clusters joined and each lease renewed once (``pipeline_bench.leases``: the body ``federation agent``
sends). Timed: T client threads (keep-alive, the admin token) renew the N leases round-robin, each as soon
as its previous renewal was answered, for S seconds. Nothing else runs in the server: no controllers, no
members.

Figures per run: renewals per second, latency p50 / p99, the server's CPU per renewal (``/proc``), SQL
statements per renewal (the ``cluster-lease-renewal`` label). With ``--runs R`` a fresh database and server
per run; the JSON lines (``--json``) or a table.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from bench_failover import add_series_options, print_runs, run_series
from pipeline_bench.database import database_url, fresh_database
from pipeline_bench.leases import agent_names, join_agents, renew
from pipeline_bench.processes import wait_for
from pipeline_bench.servers import NO_CONTROLLERS, Replica
from pipeline_bench.workload import percentile

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
RENEWAL_LABEL = "cluster-lease-renewal"


def server_env(admin_url: str, db_name: str) -> dict[str, str]:
    from federation.store.crypto import generate_key

    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    env.update(
        {
            "FEDERATION_DATABASE_URL": database_url(admin_url, db_name, "+psycopg"),
            "FEDERATION_SECRETS__ENCRYPTION_KEY": generate_key().decode(),
            "FEDERATION_API__INSECURE_HTTP": "true",
        }
    )
    return env


def renew_for(url: str, token: str, names: list[str], threads: int, seconds: float) -> list[float]:
    """Latencies (ms) of every renewal made by ``threads`` threads in ``seconds``; thread i renews names
    i, i + threads, ... round-robin."""
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    deadline = time.perf_counter() + seconds

    def agent(index: int) -> None:
        mine = names[index::threads]
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            count = 0
            while time.perf_counter() < deadline and not errors:
                started = time.perf_counter()
                try:
                    renew(http, mine[count % len(mine)])
                except BaseException as exc:
                    errors.append(exc)
                    return
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)
                count += 1

    workers = [threading.Thread(target=agent, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return latencies


def statements(replica: Replica, label: str) -> int:
    """The statements of ``label`` so far, counted in the ``serve`` process (an API-only replica has one)."""
    return sum((replica.counts_by_process()[0]["statements"].get(label) or {}).values())


@contextmanager
def api_only_replica(admin_url: str, prefix: str) -> Iterator[tuple[Replica, str]]:
    """One ``serve --no-controllers`` on a fresh database, ready, with the admin token; stopped and the
    database dropped afterwards."""
    with (
        fresh_database(admin_url, prefix) as db_name,
        tempfile.TemporaryDirectory(prefix=f"{prefix}-") as workdir,
    ):
        replica = Replica(Path(workdir), "api0", server_env(admin_url, db_name), (NO_CONTROLLERS,))
        replica.start()
        try:
            wait_for(replica.ready, 120, "api0 /readyz")
            yield replica, replica.admin_token()
        finally:
            replica.stop(30)


def run_once(args: argparse.Namespace) -> dict[str, Any]:
    names = agent_names(args.clusters)
    with api_only_replica(args.pg_admin_url, "bench_leases") as (replica, token):
        with httpx.Client(base_url=replica.url, headers={"Authorization": f"Bearer {token}"}) as http:
            join_agents(http, names)
        time.sleep(1.0)  # the counters file is written twice a second
        statements_before, cpu_before = statements(replica, RENEWAL_LABEL), replica.cpu_seconds()
        started = time.perf_counter()
        latencies = renew_for(replica.url, token, names, args.threads, args.seconds)
        elapsed = time.perf_counter() - started
        cpu = replica.cpu_seconds() - cpu_before
        time.sleep(1.0)
        renewal_statements = statements(replica, RENEWAL_LABEL) - statements_before
    count = len(latencies)
    return {
        "clusters": args.clusters,
        "threads": args.threads,
        "renewals": count,
        "renewals_per_s": round(count / elapsed, 1),
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "server_cpu_ms_per_renewal": round(1000 * cpu / count, 2),
        "statements_per_renewal": round(renewal_statements / count, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0)
    add_series_options(parser, PG_ADMIN_URL)
    args = parser.parse_args()
    results = run_series(args, run_once)
    if not args.json:
        columns = ["renewals_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_renewal"]
        columns.append("statements_per_renewal")
        heading = (
            f"{args.clusters} pull clusters, {args.threads} agents' threads, {args.seconds:.0f} s per run"
        )
        print_runs(results, heading, columns, "renewals_per_s", "median renewals/s")


if __name__ == "__main__":
    main()
