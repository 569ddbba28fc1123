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

This file is the command line; the benchmark is in ``pipeline_bench/`` beside it (its ``__init__`` says
which module does what).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# The modules are in pipeline_bench/ beside this file: python puts this file's directory on sys.path.
from pipeline_bench.figures import report
from pipeline_bench.run import run_bench

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


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
    parser.add_argument(
        "--heap-dir",
        metavar="DIR",
        help="measurement only: each server traces its allocations (tracemalloc) and leaves heap reports "
        "here, before the writes and after the idle window (with VmRSS after glibc's malloc_trim); see "
        "pipeline_bench/heap.py",
    )
    parser.add_argument("--heap-frames", type=int, default=1, help="tracemalloc frames with --heap-dir")
    args = parser.parse_args(argv)
    args.replicas = args.replicas or args.clusters
    args.namespaces = args.namespaces or max(1, args.bindings // 20)
    result = run_bench(args)
    print(json.dumps(result) if args.json else report(result), flush=True)
    if result["timed_out"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
