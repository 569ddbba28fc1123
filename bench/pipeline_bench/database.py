"""Postgres: scratch and benchmark databases (created and dropped), ``pgbench`` on a scratch one (the
database's own pace, measured in the same run), and the ``pg_stat_database`` counters of a database."""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg


def admin_connection(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True)


@contextlib.contextmanager
def fresh_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A new database on the admin URL's server, dropped (connections forced off) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with admin_connection(admin_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with admin_connection(admin_url) as conn:
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
    with admin_connection(admin_url) as conn:
        row = conn.execute(query, (name,)).fetchone()
    assert row is not None
    return DbStats(int(row[0]), int(row[1]), int(row[2]))
