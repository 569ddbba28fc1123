"""Deployment writes against one API-only replica: the API's own cost per write (issue 12: API write p99,
server CPU per binding), with no controller or member sharing its cores.

One command: ``bench/bench_api_writes.py [--writes 3000] [--writers 8] [--runs 2] [--json]``.

Set-up (not timed): a fresh Postgres database; one ``serve --no-controllers`` on it (plain HTTP, started
through the pipeline benchmark's instrumented entry, so its SQL statements are counted by label); 200
Deployments PUT to warm the server up (imports, caches, prepared statements). Timed: W client threads
(keep-alive, the admin token) PUT N new Deployments (the pipeline's bodies: ``pipeline_bench.workload``,
twenty per namespace), each thread its next one as soon as the last was answered.

Figures per run: writes per second, latency p50 / p99, the server's CPU per write (``/proc``: the API
process, what ``pipeline.py`` reports as ``server_cpu_s_by_process.parent``), SQL statements per write
(the ``api`` label). With ``--runs R`` a fresh database and server per run; JSON lines (``--json``) or a
table.

An anchor (an older commit's tree): run this script from that tree's directory with ``PYTHONPATH`` set to it
(``cd /tmp/anchor && PYTHONPATH=/tmp/anchor python /path/to/bench/bench_api_writes.py``): the server
imports ``federation`` from its working directory first.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from bench_failover import add_gc_option, run_series
from bench_leases import PG_ADMIN_URL, server_env
from pipeline_bench.database import fresh_database
from pipeline_bench.processes import wait_for
from pipeline_bench.servers import NO_CONTROLLERS, Replica
from pipeline_bench.workload import deployment, percentile, write_all

WARM_UP = 200
PER_NAMESPACE = 20
API_LABEL = "api"


def bodies(first: int, count: int) -> list[dict[str, Any]]:
    return [
        deployment(f"web-{i:06d}", f"bench{i // PER_NAMESPACE:03d}", 3) for i in range(first, first + count)
    ]


def api_statements(replica: Replica) -> int:
    """The API's statements so far, counted in the ``serve`` process (an API-only replica has no other)."""
    return sum((replica.counts_by_process()[0]["statements"].get(API_LABEL) or {}).values())


def run_once(args: argparse.Namespace) -> dict[str, Any]:
    with (
        fresh_database(args.pg_admin_url, "bench_api_writes") as db_name,
        tempfile.TemporaryDirectory(prefix="bench-api-writes-") as workdir,
    ):
        replica = Replica(Path(workdir), "api0", server_env(args.pg_admin_url, db_name), (NO_CONTROLLERS,))
        replica.start()
        try:
            wait_for(replica.ready, 120, "api0 /readyz")
            token = replica.admin_token()
            write_all([replica.url], token, bodies(args.writes, WARM_UP), args.writers)
            time.sleep(1.0)  # the counters file is written twice a second
            statements_before, cpu_before = api_statements(replica), replica.cpu_seconds()
            writes = write_all([replica.url], token, bodies(0, args.writes), args.writers)
            cpu = replica.cpu_seconds() - cpu_before
            time.sleep(1.0)
            statements = api_statements(replica) - statements_before
            with httpx.Client(base_url=replica.url, headers={"Authorization": f"Bearer {token}"}) as http:
                listed = http.get("/apis/apps/v1/deployments", params={"limit": 1}).json()
        finally:
            replica.stop(30)
    if not listed.get("items"):
        raise RuntimeError("the server holds no Deployment after the writes")
    latencies = writes.latencies_ms
    return {
        "writes": len(latencies),
        "writers": args.writers,
        "writes_per_s": round(len(latencies) / (writes.finished - writes.started), 1),
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "server_cpu_ms_per_write": round(1000 * cpu / len(latencies), 3),
        "statements_per_write": round(statements / len(latencies), 2),
        "retried": writes.retried,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=3000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--pg-admin-url", default=PG_ADMIN_URL)
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    add_gc_option(parser)
    args = parser.parse_args()
    results = run_series(args, run_once)
    if not args.json:
        columns = ["writes_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_write", "statements_per_write"]
        print(f"{args.writes} Deployment PUTs from {args.writers} threads per run")
        print(" | ".join(columns))
        for result in results:
            print(" | ".join(str(result[c]) for c in columns))
        if len(results) > 1:
            median = statistics.median(r["server_cpu_ms_per_write"] for r in results)
            print(f"median server CPU per write: {median} ms")


if __name__ == "__main__":
    main()
