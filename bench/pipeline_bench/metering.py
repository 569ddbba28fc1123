"""Samples of every counter at one moment (server CPU, pg_stat_database, the servers' statement and
controller counters, the members' calls) and what happened between two samples. A server is its ``serve``
process and its children (the controller process, where the controllers run apart): their counters and CPU
add up (``servers``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .database import DbStats, db_stats

if TYPE_CHECKING:
    from .run import Bench

TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
MEMBER_WRITES = ("POST", "PUT", "PATCH", "DELETE")


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
    cpu: list[float]  # per replica: its serve process and its children
    children_cpu: list[float]  # per replica: its children alone
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
        snapshots = [s for r in bench.replicas for s in r.counts_by_process()]
        cpu = [r.cpu_by_process() for r in bench.replicas]
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
            [own + children for own, children in cpu],
            [children for _, children in cpu],
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
    children = sum(after.children_cpu) - sum(before.children_cpu)
    return {
        "seconds": seconds,
        "cpu_s": sum(cpu),
        "cpu_s_per_replica": [round(c, 2) for c in cpu],
        "cpu_s_by_process": {"parent": round(sum(cpu) - children, 2), "child": round(children, 2)},
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
