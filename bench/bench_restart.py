"""How long `federation serve` takes to start on a migrated database: until it serves, until its controllers
lead (issue 12: cold start; what a restart costs before any controller work).

One command: ``bench/bench_restart.py [--starts 8] [--json]``.

Set-up (not timed): a fresh Postgres database, migrated and given its admin token by a first start that
is stopped again. Timed, ``--starts`` times: ``python -m federation serve`` exactly as an operator runs it
(no instrumentation; plain HTTP on a port of its own; the controllers, on Postgres, in their child
process), from the moment it is started until ``/readyz`` answers 200 (``ready_s``) and until the
leader lease has a holder (``leading_s``: the controllers' runner is up and starts its first passes); then
SIGTERM, which releases the lease, so the next start takes it at once. The servers' CPU over a start
(``cpu_s``: the `serve` process and its children, from ``/proc``, once both times are in).

The code under test is the ``federation`` the server imports: to time another checkout, run this script
from that checkout's directory with ``PYTHONPATH`` naming it (``python -m`` imports from the working
directory first). JSON lines (``--json``: one per start, then the medians) or a table.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from bench_leases import server_env
from pipeline_bench.database import database_url, fresh_database
from pipeline_bench.processes import (
    child_pids,
    free_port,
    process_and_reaped_cpu_seconds,
    process_cpu_seconds,
)

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
POLL_SECONDS = 0.02
DEADLINE_SECONDS = 120.0


def lease_holder(conn: psycopg.Connection[Any]) -> str | None:
    try:
        row = conn.execute("SELECT holder FROM leases WHERE kind = 'leader'").fetchone()
    except psycopg.errors.UndefinedTable:  # the first start, before its migration
        return None
    return None if row is None else row[0]


def serves(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(f"{url}/readyz").status_code == 200
    except httpx.HTTPError:
        return False


def start_once(env: dict[str, str], data_dir: Path, log: Path, db_url: str) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "federation", "serve", "--data-dir", str(data_dir), "--port", str(port)]
    times: dict[str, float] = {}
    # One connection and one client for every poll: opening one per poll would take CPU from the start.
    with (
        log.open("ab") as out,
        psycopg.connect(db_url, autocommit=True) as conn,
        httpx.Client(timeout=1.0) as http,
    ):
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            while len(times) < 2:
                now = time.perf_counter() - started
                if now > DEADLINE_SECONDS:
                    raise TimeoutError(f"serve did not start within {DEADLINE_SECONDS:.0f} s (see {log})")
                if process.poll() is not None:
                    raise RuntimeError(f"serve exited with {process.returncode} (see {log})")
                if "ready_s" not in times and serves(http, url):
                    times["ready_s"] = now
                if "leading_s" not in times and lease_holder(conn) is not None:
                    times["leading_s"] = now
                time.sleep(POLL_SECONDS)
            own, reaped = process_and_reaped_cpu_seconds(process.pid)
            cpu = own + reaped + sum(process_cpu_seconds(pid) for pid in child_pids(process.pid))
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=DEADLINE_SECONDS)
    return {**{k: round(v, 3) for k, v in times.items()}, "cpu_s": round(cpu, 2)}


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    with (
        fresh_database(args.pg_admin_url, "bench_restart") as db_name,
        tempfile.TemporaryDirectory(prefix="bench-restart-") as workdir,
    ):
        env = server_env(args.pg_admin_url, db_name)
        data_dir, log = Path(workdir) / "serve", Path(workdir) / "serve.log"
        db_url = database_url(args.pg_admin_url, db_name)
        start_once(env, data_dir, log, db_url)  # migrates, makes the admin token: not timed
        return [start_once(env, data_dir, log, db_url) for _ in range(args.starts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--pg-admin-url", default=PG_ADMIN_URL)
    parser.add_argument("--json", action="store_true", help="one JSON line per start, then the medians")
    args = parser.parse_args()
    starts = run(args)
    medians = {key: round(statistics.median(s[key] for s in starts), 3) for key in starts[0]}
    code = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["federation"].__file__ or "")))
    if args.json:
        for entry in starts:
            print(json.dumps(entry))
        print(json.dumps({"median": medians, "starts": len(starts), "code": code}))
        return
    print(f"{len(starts)} starts of `serve` on a migrated database ({code})")
    print("  ".join(f"{key:>10}" for key in medians))
    for entry in starts:
        print("  ".join(f"{entry[key]:>10.3f}" for key in medians))
    print("  ".join(f"{medians[key]:>10.3f}" for key in medians), " (medians)")


if __name__ == "__main__":
    main()
