"""The whole pipeline end to end on Postgres: API writes → detector → scheduler → execution → work sync →
members, with real `serve` processes (issue 12, "Benchmarks").

One command: ``bench/pipeline.py --bindings N --clusters M --replicas-of-serve R [--api-replicas K]
[--lease-clusters L [--lease-interval S]] [--json]``.

Set-up (not timed): ``pgbench -i`` on a scratch database, then ``pgbench -N`` (one-row transactions) on it for
``--pgbench-seconds`` with ``--pgbench-clients`` clients: the database's own pace on this machine, measured in
the same run. A fresh benchmark database; R ``python -m federation serve`` processes on it (one Fernet key,
plain HTTP on free ports, each its own data directory, the controllers' default intervals unless
``--interval`` is given), named ``serve0``…; with ``--api-replicas K``, K more started with
``serve --no-controllers`` (``api0``…: the API only, never the leader lease nor a controller; the controllers
in the ``serve`` replicas see their writes at their interval tick); M simulated member clusters
(``federation.sim``, TLS), each in a process of its own and counting the requests it answers; the members
joined through ``POST /federation/v1/clusters/join``. (Three simulators in one process share a GIL: their
status LISTs, seconds each at 1,000 Deployments, starved each other's applies until the LISTs timed out.) With
``--lease-clusters L``: L Pull clusters ``lease-agent-0000``… joined (the server renews a lease only for a
cluster that exists), each lease renewed once, and all published Ready by the status controller before t0, so
the timed phase sees a steady fleet; the servers then run with a monitor grace of a day instead of 40 s, so
the L clusters do not turn Unknown (L status writes, taints, bindings re-queued) after the agents stop, in the
idle window or the cold start (see ``pipeline_bench/leases.py``). The idle and cold start figures then include
the L clusters (each status pass reads them), not their renewals.

Timed from the first write (t0): one PropagationPolicy per namespace (Divided, equal static weights over
the M clusters) and N Deployments of ``--replicas`` replicas (default M: one per member, N x M Works),
spread over ``--namespaces`` namespaces (default one per 20 Deployments: the simulator renders a workload's
status from every pod of its namespace, so 1,000 in one namespace make each member LIST longer than the
members' 10 s request timeout), PUT by ``--writers`` client threads spread over the replicas (over the API
replicas only when K > 0, the policies too). A poller reads progress from the database twice a second.
With ``--lease-clusters L``, from t0 until every binding is FullyApplied, the lease load: L agents each
renewing its cluster's lease every ``--lease-interval`` seconds (default 10) as ``federation agent`` does
(``PUT /apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/<name>``), the renewals spread evenly
over the interval (L / interval per second), from ``--lease-threads`` keep-alive clients (at least one per
target) spread over the same replicas as the writers; stopped before the idle window. Then, in order:

- idle: ``--settle`` seconds after every binding is FullyApplied, a ``--idle-seconds`` window with nothing
  changing: server CPU, transactions, statements and member calls per second;
- cold start: the servers (API replicas too) are stopped (SIGTERM, ``--stop-signal``) and started again at
  once on the same database, everything in sync; the figure is the time from the start until every replica
  answers ``/readyz`` 200, every controller that ran more than once in the idle window has run (in any
  process: API replicas run none), and after both a 3 s window has passed with no write at a member and the
  servers at the idle level: CPU at most max(1.5 * idle, idle + 10 points of a core) and rows written
  (pg_stat_database) at most max(1.5 * idle, idle + 5) per second. The level is the measured idle, not zero:
  idle is not free yet. With ``--cold-starts K`` the servers are restarted K times in a row: a start's time
  varies more from one to the next than a change may move it. ``cold_start_seconds`` and
  ``cold_start_ready_seconds`` are then the medians of the K starts (each in ``cold_start_seconds_each`` and
  ``cold_start_ready_seconds_each``); the other cold-start figures are the first start's.

Figures (one JSON object with ``--json``): ``api_writes_per_s`` (N / first write → last answer),
``api_write_p50_ms`` / ``api_write_p99_ms`` (Deployment PUTs), ``lease_puts``, ``lease_put_p50_ms`` /
``lease_put_p99_ms`` (the successful lease renewals of the timed phase; None without the load),
``lease_renewals_behind`` (renewals started more than one interval after their slot: the generator could not
keep up; ``lease_start_late_p99_ms``: how late they started, the generator's own lag), ``lease_put_failures``
(not retried: an agent renews again one interval later; the first one's text in ``lease_put_first_failure``),
``lease_puts_per_s``, ``scheduled_per_s`` (N / t0 → every binding scheduled), ``works_per_s`` (Works / t0 →
every Work written), ``seconds_to_all_applied`` (t0 → every Work ``Applied`` on its member, the
``works.applied`` column), ``pgbench_tps``, ``rss_mb_per_10k_bindings`` (the largest growth of a server's
VmRSS from before the first write to after the idle window, scaled to 10,000 bindings; each replica's in
``rss_mb``), ``idle_cpu_percent`` (all servers, percent of one core), ``idle_queries_per_s`` (pg_stat_database
``xact_commit + xact_rollback`` of the benchmark database: SQL transactions per second),
``cold_start_seconds``; per binding over t0 → every binding FullyApplied (as the issue's table): SQL
statements (counted in each server, see below), SQL transactions and rows written (pg_stat_database), member
calls (counted at the members), server CPU (``/proc``); every server process counts, the API replicas too
(they do the API work), and with ``--lease-clusters`` so does the lease load (its statements are labelled
``cluster-lease-renewal``). A replica is its ``serve`` process and, where ``serve`` runs its controllers in a
child process (Postgres, ``controllers.separate_process``), that child too: its statements, commits and
controller tallies, CPU (a restarted child's predecessors included) and VmRSS are added to the replica's
(``rss_mb`` and the growth are the sums), the split in ``server_cpu_s_by_process``,
``idle_cpu_percent_by_process``, ``cold_start_cpu_s_by_process`` (``parent``, ``child``) and
``rss_mb_by_process`` ([serve, child or null] per replica); ``controller_processes_per_replica`` counts the
children that reported over the run (one per start; more: restarts). Breakdowns per controller (runs, thread
CPU, statements, commits), per member request shape (calls and the member's mean time to answer), and the CPU
of the members, are in the JSON too; per-replica lists are in the order of ``replica_names``, and
``server_cpu_s_by_role`` adds up the timed phase's CPU of the ``serve`` and the ``api`` replicas. The run's
shape: ``replicas_of_serve``, ``api_replicas``, ``lease_clusters``, ``lease_interval_seconds``. A run that
does not converge within ``--timeout`` prints what it reached (``timed_out``, the counts) and exits 1.

The cold start's figures carry the CPU spent over it by the servers (``cold_start_cpu_s``) and by the
members (``cold_start_members_cpu_s``), and ``cold_start_timeline``: per second, the servers' CPU (percent
of one core), statements, rows written, member calls and the members' CPU (percent of one core).

SQL statements: ``pg_stat_statements`` needs ``shared_preload_libraries``, which a shared server cannot be
restarted for, so each server process is started through ``instrumented_serve``: ``python -m federation``
unchanged, plus a SQLAlchemy ``before_cursor_execute`` listener and a wrapper around the controller runner's
job method that labels each statement with the controller that ran it and adds up the controllers' thread
CPU; ``serve`` starts its controller process through it too (``CHILD_COMMAND``), which counts into a file of
its own. Transaction control (BEGIN/COMMIT/SAVEPOINT/RELEASE) is left out, as in ``bench_failover.py``.

``environment`` names the machine, Python, Postgres and the code under test: ``commit`` (and
``uncommitted_changes``) of the tree whose ``federation`` the servers import, ``code_root``, so an anchor
run from another checkout (``PYTHONPATH=<checkout>``) names the anchor; ``bench_commit`` is this script's.

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
    parser.add_argument(
        "--api-replicas",
        type=int,
        default=0,
        help="more `serve --no-controllers` processes (API only); when > 0 the Deployment writes and the "
        "lease load go to these only",
    )
    parser.add_argument(
        "--lease-clusters",
        type=int,
        default=0,
        help="while the pipeline runs, this many pull-mode agents renew their cluster's lease (API)",
    )
    parser.add_argument(
        "--lease-interval", type=float, default=10.0, help="seconds between an agent's renewals"
    )
    parser.add_argument(
        "--lease-threads",
        type=int,
        default=16,
        help="client threads of the lease load: at least the renewals per second x their latency in "
        "seconds, or the load lags behind its schedule (lease_start_late_p99_ms)",
    )
    parser.add_argument("--replicas", type=int, help="replicas per Deployment (default: --clusters)")
    parser.add_argument("--writers", type=int, default=8, help="client threads writing the Deployments")
    parser.add_argument(
        "--member-latency-ms",
        type=int,
        default=0,
        help="every member answers this much later (a member across a network; it holds up no other "
        "request to that member)",
    )
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
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting by its environment name without FEDERATION_, e.g. MEMBERS__STATUS_WATCH=false "
        "(Work status by rounds of LISTs instead of watches)",
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
    parser.add_argument(
        "--cold-starts", type=int, default=1, help="restarts in a row (the figures: their medians)"
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
    if args.lease_interval <= 0 or min(args.api_replicas, args.lease_clusters) < 0 or args.lease_threads < 1:
        parser.error("--lease-interval must be > 0, --lease-threads >= 1, the counts >= 0")
    args.replicas = args.replicas or args.clusters
    args.namespaces = args.namespaces or max(1, args.bindings // 20)
    result = run_bench(args)
    print(json.dumps(result) if args.json else report(result), flush=True)
    if result["timed_out"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
