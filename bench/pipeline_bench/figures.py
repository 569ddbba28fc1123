"""The figures of a run (one JSON object) and the short text report of the main ones."""

from __future__ import annotations

import json
import statistics
from typing import TYPE_CHECKING, Any

from .cold_start import rss_pairs
from .database import DbStats
from .leases import LeaseRenewals
from .workload import Writes, percentile

if TYPE_CHECKING:
    from .run import Bench


def _rate(count: float, seconds: float | None) -> float | None:
    return None if not seconds else round(count / seconds, 1)


def _p_ms(values: list[float], q: float) -> float | None:
    return round(percentile(values, q), 1) if values else None


def lease_figures(bench: Bench, renewals: LeaseRenewals) -> dict[str, Any]:
    """The lease load of the timed part (``leases``); zeros and None without ``--lease-clusters``."""
    args = bench.args
    return {
        "lease_clusters": args.lease_clusters,
        "lease_interval_seconds": args.lease_interval,
        "lease_puts": len(renewals.latencies_ms),
        "lease_puts_per_s": _rate(len(renewals.latencies_ms), renewals.seconds),
        "lease_put_p50_ms": _p_ms(renewals.latencies_ms, 0.50),
        "lease_put_p99_ms": _p_ms(renewals.latencies_ms, 0.99),
        "lease_renewals_behind": renewals.behind,
        "lease_start_late_p99_ms": _p_ms(renewals.late_ms, 0.99),
        "lease_put_failures": renewals.failures,
        "lease_put_first_failure": renewals.first_failure,
    }


def pipeline_figures(bench: Bench, run: dict[str, Any]) -> dict[str, Any]:
    """The figures of the timed part: writes, milestones, and per binding over the window."""
    args = bench.args
    writes: Writes = run["writes"]
    reached, goals, window = run["reached"], run["goals"], run["window"]
    n = args.bindings
    write_seconds = writes.finished - writes.started
    db: DbStats = window["db"]
    scheduled = reached.get("scheduled")
    scheduled_after_writes = goals["scheduled"] - (run["at_writes_end"]["scheduled"] or 0)
    after_writes = None
    if scheduled is not None and scheduled_after_writes > 0 and scheduled > run["writes_end"]:
        after_writes = _rate(scheduled_after_writes, scheduled - run["writes_end"])
    cpu_by_role: dict[str, float] = {}
    for replica, cpu in zip(bench.replicas, window["cpu_s_per_replica"], strict=True):
        role = "api" if replica.api_only else "serve"
        cpu_by_role[role] = round(cpu_by_role.get(role, 0.0) + cpu, 2)
    return {
        "bindings": n,
        "clusters": args.clusters,
        "replicas_of_serve": args.replicas_of_serve,
        "api_replicas": args.api_replicas,
        "replica_names": [r.name for r in bench.replicas],
        "replicas_per_deployment": args.replicas,
        "writers": args.writers,
        "member_latency_ms": args.member_latency_ms,
        "namespaces": args.namespaces,
        "settings": list(args.setting),
        "timed_out": run["timed_out"],
        "api_writes_per_s": _rate(n, write_seconds),
        "api_write_p50_ms": round(percentile(writes.latencies_ms, 0.50), 1),
        "api_write_p99_ms": round(percentile(writes.latencies_ms, 0.99), 1),
        "api_write_retries": writes.retried,
        **lease_figures(bench, run["lease_renewals"]),
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
        "server_cpu_s_by_role": cpu_by_role,
        "server_cpu_s_by_process": window["cpu_s_by_process"],
        "controller_processes_per_replica": [len(r.controller_pids) for r in bench.replicas],
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
    before, after = (_rss_sums(run[key]) for key in ("rss_before", "rss_after"))
    growth = [a - b for a, b in zip(after, before, strict=True)]
    window = cold["window"]
    return {
        "rss_mb_per_10k_bindings": round(max(growth) * 10_000 / run["goals"]["bindings"], 1),
        "rss_mb": {
            "before_writes": [round(v, 1) for v in before],
            "after_idle": [round(v, 1) for v in after],
            "after_cold_start": cold["rss_mb"],
        },
        "rss_mb_by_process": {
            "before_writes": rss_pairs(run["rss_before"]),
            "after_idle": rss_pairs(run["rss_after"]),
            "after_cold_start": cold["rss_mb_by_process"],
        },
        "idle_cpu_percent": round(100 * idle["cpu_s"] / seconds, 1),
        "idle_cpu_percent_per_replica": [round(100 * c / seconds, 1) for c in idle["cpu_s_per_replica"]],
        "idle_cpu_percent_by_process": {
            k: round(100 * v / seconds, 1) for k, v in idle["cpu_s_by_process"].items()
        },
        "idle_queries_per_s": _rate(idle["db"].transactions, seconds),
        "idle_queries_are": "pg_stat_database xact_commit + xact_rollback of the benchmark database per s",
        "idle_statements_per_s": _rate(idle["statements"], seconds),
        "idle_rows_written_per_s": _rate(idle["db"].rows_written, seconds),
        "idle_member_calls_per_s": _rate(idle["member_calls"], seconds),
        "idle_members_cpu_percent": round(100 * idle["members_cpu_s"] / seconds, 1),
        "idle_statements_by_label": idle["statements_by_label"],
        "idle_member_calls_by_shape": idle["member_calls_by_shape"],
        "idle_controllers": idle["controllers"],
        **_cold_start_times(cold),
        "cold_start_controllers_ran_seconds": cold["controllers_ran_seconds"],
        "cold_start_member_calls": None if window is None else window["member_calls"],
        "cold_start_cpu_s": None if window is None else round(window["cpu_s"], 2),
        "cold_start_cpu_s_by_process": None if window is None else window["cpu_s_by_process"],
        "cold_start_members_cpu_s": None if window is None else window["members_cpu_s"],
        "cold_start_statements": None if window is None else window["statements"],
        "cold_start_statements_by_label": None if window is None else window["statements_by_label"],
        "cold_start_controllers": None if window is None else window["controllers"],
        "cold_start_timeline": cold["timeline"],
        "stop_seconds": cold["stop_seconds"],
    }


def _cold_start_times(cold: dict[str, Any]) -> dict[str, Any]:
    """The cold start's time and time to ready: the first start's, or with ``--cold-starts K`` the medians of
    the K starts, each listed."""
    starts = [cold, *cold.get("again", [])]
    if len(starts) == 1:
        return {"cold_start_seconds": cold["seconds"], "cold_start_ready_seconds": cold["ready_seconds"]}
    each = {key: [start[key] for start in starts] for key in ("seconds", "ready_seconds")}
    known = {key: [v for v in values if v is not None] for key, values in each.items()}
    return {
        "cold_start_seconds": round(statistics.median(known["seconds"]), 2) if known["seconds"] else None,
        "cold_start_ready_seconds": (
            round(statistics.median(known["ready_seconds"]), 2) if known["ready_seconds"] else None
        ),
        "cold_start_seconds_each": each["seconds"],
        "cold_start_ready_seconds_each": each["ready_seconds"],
    }


def _rss_sums(rss: list[tuple[float, float | None]]) -> list[float]:
    """Per replica: VmRSS of its serve process and its children (the controller process) together."""
    return [own + (children or 0.0) for own, children in rss]


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
    api_only = f" + {result['api_replicas']} API-only" if result["api_replicas"] else ""
    lines = [
        f"{result['bindings']} bindings x {result['clusters']} clusters, {result['replicas_of_serve']} serve "
        f"replica(s){api_only}, {result['writers']} writers"
    ]
    if result["timed_out"]:
        lines.append(f"  TIMED OUT: counts at the end {result['counts_at_the_end']}")
    lines += [f"  {key}: {result[key]}" for key in keys]
    if result["lease_clusters"]:
        lines.append(
            f"  lease load: {result['lease_clusters']} clusters every {result['lease_interval_seconds']} s, "
            f"{result['lease_puts']} PUTs ({result['lease_puts_per_s']}/s), p50 {result['lease_put_p50_ms']} "
            f"ms, p99 {result['lease_put_p99_ms']} ms, {result['lease_renewals_behind']} behind, "
            f"{result['lease_put_failures']} failed"
        )
    lines.append(f"  per binding: {json.dumps(result['per_binding'])}")
    lines.append(f"  server CPU s by process: {json.dumps(result['server_cpu_s_by_process'])}")
    return "\n".join(lines)
