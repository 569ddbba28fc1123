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
import time
from typing import Any

import httpx
from bench_failover import add_series_options, print_runs, run_series
from bench_leases import PG_ADMIN_URL, api_only_replica, statements
from pipeline_bench.workload import deployment, percentile, write_all

WARM_UP = 200
PER_NAMESPACE = 20
API_LABEL = "api"


def bodies(first: int, count: int) -> list[dict[str, Any]]:
    return [
        deployment(f"web-{i:06d}", f"bench{i // PER_NAMESPACE:03d}", 3) for i in range(first, first + count)
    ]


def run_once(args: argparse.Namespace) -> dict[str, Any]:
    with api_only_replica(args.pg_admin_url, "bench_api_writes") as (replica, token):
        write_all([replica.url], token, bodies(args.writes, WARM_UP), args.writers)
        time.sleep(1.0)  # the counters file is written twice a second
        statements_before, cpu_before = statements(replica, API_LABEL), replica.cpu_seconds()
        writes = write_all([replica.url], token, bodies(0, args.writes), args.writers)
        cpu = replica.cpu_seconds() - cpu_before
        time.sleep(1.0)
        api_statements = statements(replica, API_LABEL) - statements_before
        with httpx.Client(base_url=replica.url, headers={"Authorization": f"Bearer {token}"}) as http:
            listed = http.get("/apis/apps/v1/deployments", params={"limit": 1}).json()
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
        "statements_per_write": round(api_statements / len(latencies), 2),
        "retried": writes.retried,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=3000)
    parser.add_argument("--writers", type=int, default=8)
    add_series_options(parser, PG_ADMIN_URL)
    args = parser.parse_args()
    results = run_series(args, run_once)
    if not args.json:
        columns = ["writes_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_write", "statements_per_write"]
        heading = f"{args.writes} Deployment PUTs from {args.writers} threads per run"
        print_runs(results, heading, columns, "server_cpu_ms_per_write", "median server CPU per write (ms)")


if __name__ == "__main__":
    main()
