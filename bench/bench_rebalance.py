"""One WorkloadRebalancer over 1,000 Divided workloads on 100 clusters (issue 9, "Benchmark").

Set-up (not timed): ``bench_failover``'s — a migrated database (Postgres by default, SQLite with
``--backend sqlite`` or ``--database-url sqlite:///...``), N clusters with Ready=True status and capacity
(member000 1,500 pods, the others 500), one PropagationPolicy (Divided, dynamicWeight AvailableReplicas
over all clusters) and M Deployments of R replicas; the detector, scheduler and execution controllers run
until every binding is scheduled and its Works are written. Then capacity changes: ``--raise`` clusters
(member001, member002, ...) get ``--raised-pods`` allocatable pods, written as the cluster status
controller writes a status, and the controllers run again until idle: a capacity change alone does not
move a Divided binding (no trigger), so every placement stays as it was, while a fresh schedule would
now put most replicas on the raised clusters.

Timed: ONE WorkloadRebalancer (``apps.karmada.io/v1alpha1``, cluster-scoped) naming all M Deployments is
created through the store (``ObjectRepository``), then the controllers run in a loop, in the order the
runner's wake-ups chain them: WorkloadRebalancerController (writes each binding's
``spec.rescheduleTriggeredAt``; later, judges the entries) → scheduler (fresh schedules) → execution
(Works). The loop stops at the first pass in which no controller wrote anything (that pass is not in the
figures). Three milestones, each the end of the controller step after which it first holds:
(a) placements — every binding carries the trigger and ``status.lastScheduledTime >= trigger`` (the
    rebalancer's entries can turn Successful);
(b) Works — every binding's live Works are exactly one per target cluster with that cluster's replicas;
(c) rebalancer — ``status.observedWorkloads`` has M entries, all Successful, and ``finishTime`` is set.
The milestones are checked between steps with the clock stopped: the timeline is the creation plus the
controllers' steps, nothing else (the checks' statements are not counted either). Afterwards (not timed)
the count of bindings whose division changed is reported; a run in which none changed fails.

Prints a JSON line per run (``--json``) or a readable report: milestone seconds, bindings/s, SQL
statements, and per controller its time, statements and writes, pass by pass.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_failover import (
    CLUSTER_API,
    MAX_PASSES,
    NAMESPACE,
    PG_ADMIN_URL,
    Bench,
    Step,
    add_gc_option,
    cluster_status,
    run_series,
)
from sqlalchemy import select

from federation.controllers.rebalancer import WorkloadRebalancerController
from federation.controllers.runtime import Outcome
from federation.model.rebalancer import API_VERSION, KIND
from federation.store.repository import ObjectRepository
from federation.store.tables import ResourceBindingRow, WorkloadRebalancerRow, WorkRow

REBALANCER = "bench-rebalance"
MILESTONES = ("placements", "works", "rebalancer")
Placement = dict[str, int]


def rebalancer(count: int) -> dict[str, Any]:
    workloads = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"app{i:04d}", "namespace": NAMESPACE}
        for i in range(count)
    ]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": REBALANCER},
        "spec": {"workloads": workloads},
    }


def _parse(value: Any) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class State:
    """What the database says after a step (read with the clock stopped)."""

    placements: dict[str, Placement]
    rescheduled: int  # bindings carrying the trigger with lastScheduledTime >= it
    works_match: int  # bindings whose live Works are exactly their placement
    successful: int
    finished: bool


class Rebalance(Bench):
    """bench_failover's Bench (database, clusters, policy, Deployments, controllers) plus the rebalancer."""

    def __init__(self, url: str, args: argparse.Namespace) -> None:
        super().__init__(url, args)
        self.rebalancer = WorkloadRebalancerController(self.uow, self.clock)
        self.trigger: datetime | None = None

    # -- set-up (not timed) ----------------------------------------------------------------------------

    def settle(self) -> None:
        for _ in range(MAX_PASSES):
            wrote = [c.reconcile().processed for c in (self.detector, self.scheduler, self.execution)]
            if not any(wrote):
                return
        raise SystemExit("the controllers did not settle")

    def raise_capacity(self) -> list[str]:
        """Raise some clusters' allocatable pods (and CPU to match), as the cluster status controller
        writes a status; the placements do not move (nothing triggers a Divided binding)."""
        raised = self.names[1 : 1 + self.args.raise_clusters]
        cpu = str(max(64, self.args.raised_pods // 8))
        with self.uow() as session:
            repo = ObjectRepository(session, "Cluster", CLUSTER_API)
            for name in raised:
                repo.update_status("", name, cluster_status(self.args.raised_pods, cpu))
        self.settle()
        return raised

    def wait_for_next_second(self) -> None:
        """Times are ``metav1.Time`` (seconds): a binding scheduled in the trigger's own second counts as
        rescheduled. Start the timed part in a second later than every set-up schedule."""
        last = ResourceBindingRow.status["lastScheduledTime"].as_string()
        with self.uow() as session:
            stamps = [_parse(value) for value in session.scalars(select(last))]
        latest = max(s for s in stamps if s is not None)
        while self.clock.now().replace(microsecond=0) <= latest:
            time.sleep(0.02)

    # -- the measured part -----------------------------------------------------------------------------

    def rebalance(self, before: dict[str, Placement]) -> dict[str, Any]:
        controllers: dict[str, Callable[[], Outcome]] = {
            "rebalancer": self.rebalancer.reconcile,
            "scheduler": self.scheduler.reconcile,
            "execution": self.execution.reconcile,
        }
        passes: list[dict[str, Step]] = []
        reached: dict[str, tuple[float, int, int]] = {}  # milestone → (seconds, statements, pass)
        self.counter.phase = "create"
        start = time.perf_counter()
        with self.uow() as session:
            created = ObjectRepository(session, KIND, API_VERSION).create(rebalancer(self.args.bindings))
        elapsed = created_seconds = time.perf_counter() - start
        statements = self.counter.counts.get("create", 0)
        self.trigger = _parse(created["metadata"]["creationTimestamp"])
        last_write = elapsed
        while len(passes) < MAX_PASSES:
            steps: dict[str, Step] = {}
            for name, reconcile in controllers.items():
                step = self._step(name, reconcile)
                steps[name] = step
                elapsed += step.seconds
                statements += step.statements
                if step.writes:
                    last_write = elapsed
                    self._milestones(reached, elapsed, statements, len(passes) + 1)
            passes.append(steps)
            if not any(step.writes for step in steps.values()):
                break  # a pass that wrote nothing: converged (not in the figures)
        self.counter.phase = "verify"
        missing = [m for m in MILESTONES if m not in reached]
        if missing:
            raise SystemExit(f"not reached after {len(passes)} passes: {', '.join(missing)}")
        after = self.state().placements
        changed = sum(1 for name, placement in after.items() if before.get(name) != placement)
        if not changed:
            raise SystemExit("no binding's division changed: raise more capacity")
        working = [p for p in passes if any(step.writes for step in p.values())]
        bindings = self.args.bindings
        return {
            "backend": self.engine.dialect.name,
            "clusters": self.args.clusters,
            "bindings": bindings,
            "replicas": self.args.replicas,
            "raised": self.args.raise_clusters,
            "changed": changed,
            "works_after": sum(len(p) for p in after.values()),
            "example": {"binding": min(after), "before": before[min(after)], "after": after[min(after)]},
            "create_seconds": round(created_seconds, 3),
            "milestones": {
                m: {"seconds": round(s, 3), "bindings_per_second": round(bindings / s, 1), "statements": n}
                for m, (s, n, _) in reached.items()
            },
            "milestone_pass": {m: p for m, (_, _, p) in reached.items()},
            "seconds": round(last_write, 3),
            "passes": len(working),
            "statements": self.counter.counts.get("create", 0) + _sum(working, "statements"),
            "create_statements": self.counter.counts.get("create", 0),
            "phases": {name: _totals(working, name) for name in controllers},
            "idle_pass": {name: _totals(passes[len(working) :], name) for name in controllers},
            "pass_log": [{name: list(_values(step)) for name, step in p.items()} for p in passes],
        }

    def _milestones(
        self, reached: dict[str, tuple[float, int, int]], elapsed: float, statements: int, number: int
    ) -> None:
        phase = self.counter.phase
        self.counter.phase = "verify"
        try:
            state = self.state()
        finally:
            self.counter.phase = phase
        bindings = self.args.bindings
        done = {
            "placements": state.rescheduled == bindings,
            "works": state.rescheduled == bindings and state.works_match == bindings,
            "rebalancer": state.successful == bindings and state.finished,
        }
        for milestone, holds in done.items():
            if holds and milestone not in reached:
                reached[milestone] = (elapsed, statements, number)

    # -- reading the outcome (not timed) ---------------------------------------------------------------

    def state(self) -> State:
        """Columns only: the checks read a few fields of each binding and Work, not whole rows."""
        b, w, r = ResourceBindingRow, WorkRow, WorkloadRebalancerRow
        with self.uow() as session:
            rows = session.execute(
                select(b.id, b.name, b.spec, b.status["lastScheduledTime"].as_string())
            ).all()
            works: dict[int, dict[str, int]] = {}
            for binding_id, cluster_name, extra, spec in session.execute(
                select(w.binding_id, w.cluster_name, w.metadata_extra, w.spec)
            ):
                if (extra or {}).get("deletionTimestamp"):
                    continue
                replicas = spec["workload"]["manifests"][0]["spec"]["replicas"]
                works.setdefault(int(binding_id or 0), {})[cluster_name] = int(replicas)
            status = session.scalar(select(r.status).where(r.name == REBALANCER)) or {}
        placements: dict[str, Placement] = {}
        rescheduled = matching = 0
        for binding_id, name, spec, last_scheduled in rows:
            target = {c["name"]: int(c.get("replicas") or 0) for c in spec.get("clusters") or []}
            placements[name] = target
            triggered = _parse(spec.get("rescheduleTriggeredAt"))
            scheduled = _parse(last_scheduled)
            if (
                self.trigger is not None
                and triggered == self.trigger
                and scheduled is not None
                and scheduled >= self.trigger
            ):
                rescheduled += 1
            if works.get(binding_id, {}) == target:
                matching += 1
        entries = status.get("observedWorkloads") or []
        successful = sum(1 for e in entries if e.get("result") == "Successful")
        return State(placements, rescheduled, matching, successful, bool(status.get("finishTime")))


# -- copied from bench_failover (private there, or named for it) ------------------------------------------


def _values(step: Step) -> tuple[float, float, int, int]:
    return round(step.seconds, 3), round(step.cpu, 3), step.writes, step.statements


def _sum(passes: list[dict[str, Step]], field_name: str) -> int:
    return sum(getattr(step, field_name) for p in passes for step in p.values())


def _totals(passes: list[dict[str, Step]], name: str) -> dict[str, float | int]:
    steps = [p[name] for p in passes]
    return {
        "seconds": round(sum(s.seconds for s in steps), 3),
        "cpu": round(sum(s.cpu for s in steps), 3),
        "writes": sum(s.writes for s in steps),
        "statements": sum(s.statements for s in steps),
        "gc": round(sum(s.gc for s in steps), 3),
    }


@contextlib.contextmanager
def database(args: argparse.Namespace) -> Iterator[str]:
    """bench_failover's, with this bench's name on the fresh database (dropped after) or SQLite file."""
    if args.database_url:
        yield args.database_url
    elif args.backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="bench-rebalance-") as directory:
            yield f"sqlite:///{Path(directory) / 'federation.db'}"
    else:
        import psycopg

        admin = args.pg_admin_url.replace("postgresql+psycopg://", "postgresql://", 1)
        name = f"bench_rebalance_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{args.pg_admin_url.rpartition('/')[0]}/{name}"
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _profiler(args: argparse.Namespace) -> Any:
    if not args.profile:
        return None
    from pyinstrument import Profiler

    profiler = Profiler(interval=args.profile_interval)
    profiler.start()
    return profiler


# -- the run ---------------------------------------------------------------------------------------------


def run_once(args: argparse.Namespace) -> dict[str, Any]:
    with database(args) as url:
        bench = Rebalance(url, args)
        try:
            start = time.perf_counter()
            bench.setup()
            bench.raise_capacity()
            before = bench.state()
            if before.works_match != args.bindings:
                raise SystemExit(f"set-up: {before.works_match} of {args.bindings} bindings have their Works")
            bench.wait_for_next_second()
            setup_seconds = time.perf_counter() - start
            profiler = _profiler(args)
            result = bench.rebalance(before.placements)
            if profiler is not None:
                profiler.stop()
                Path(args.profile).write_text(profiler.output_text(unicode=True, color=False, show_all=False))
            works = sum(len(p) for p in before.placements.values())
        finally:
            bench.close()
    result["setup_seconds"] = round(setup_seconds, 1)
    result["works_before"] = works
    return result


def _placement(placement: Placement) -> str:
    return " ".join(f"{name}:{replicas}" for name, replicas in sorted(placement.items()))


def report(results: list[dict[str, Any]]) -> str:
    middle = sorted(results, key=lambda r: r["milestones"]["placements"]["seconds"])[len(results) // 2]
    lines = [
        f"{middle['backend']} (gc: {middle.get('gc', 'cpython')}): {middle['clusters']} clusters, "
        f"{middle['bindings']} Divided dynamic-weight "
        f"bindings of {middle['replicas']} replicas, {middle['raised']} clusters raised; "
        f"{middle['changed']} divisions changed (set-up {middle['setup_seconds']} s, "
        f"{middle['works_before']} Works before, {middle['works_after']} after)",
        f"e.g. {middle['example']['binding']}: {_placement(middle['example']['before'])} → "
        f"{_placement(middle['example']['after'])}",
    ]
    for milestone in MILESTONES:
        runs = [r["milestones"][milestone]["seconds"] for r in results]
        listed = ", ".join(f"{s:.2f}" for s in runs)
        lines.append(f"{milestone}: runs {listed} s; median {statistics.median(runs):.2f} s")
    lines += [
        "",
        "the median run (by placements):",
        "",
        "| milestone | s since the create | bindings/s | SQL statements | reached in pass |",
        "|---|---:|---:|---:|---:|",
    ]
    for milestone, figures in middle["milestones"].items():
        lines.append(
            f"| {milestone} | {figures['seconds']:.2f} | {figures['bindings_per_second']:,} "
            f"| {figures['statements']:,} | {middle['milestone_pass'][milestone]} |"
        )
    lines += [
        "",
        "| phase | wall s | CPU s | of it the collector, s | writes | SQL statements |",
        "|---|---:|---:|---:|---:|---:|",
        f"| create | {middle['create_seconds']:.2f} | | | 1 | {middle['create_statements']:,} |",
    ]
    for name, phase in middle["phases"].items():
        lines.append(
            f"| {name} | {phase['seconds']:.2f} | {phase['cpu']:.2f} | {phase.get('gc', 0):.2f} "
            f"| {phase['writes']:,} "
            f"| {phase['statements']:,} |"
        )
    lines.append(f"| **total** | **{middle['seconds']:.2f}** | | | | {middle['statements']:,} |")
    idle = middle["idle_pass"]
    lines.append(
        "\nphases: every step of the passes that wrote (the steps after the last write, e.g. the execution's "
        "re-check in the rebalancer's last pass, are in the phases, not in the total)"
    )
    lines.append(
        f"{middle['passes']} pass(es) to converge; the idle pass that confirms it (not in the total): "
        + ", ".join(f"{name} {phase['seconds']:.2f} s" for name, phase in idle.items())
    )
    for index, row in enumerate(middle["pass_log"], 1):
        lines.append(
            f"  pass {index}: "
            + ", ".join(
                f"{k} {wall:.2f} s/{writes} writes/{n} stmts" for k, (wall, _, writes, n) in row.items()
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get("FEDERATION_BENCH_DATABASE_URL"),
        help="run on this (empty) database; default: a fresh Postgres database, dropped afterwards",
    )
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument(
        "--pg-admin-url",
        default=os.environ.get("FEDERATION_BENCH_PG_ADMIN_URL", PG_ADMIN_URL),
        help="where to create and drop the fresh Postgres database",
    )
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--bindings", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--raise", dest="raise_clusters", type=int, default=10, help="clusters to raise")
    parser.add_argument("--raised-pods", type=int, default=2000, help="their allocatable pods")
    parser.add_argument("--runs", type=int, default=1, help="fresh database per run; the median is quoted")
    parser.add_argument("--profile", help="write a pyinstrument profile of the timed part to this file")
    parser.add_argument("--profile-interval", type=float, default=0.001, help="sampling interval, seconds")
    parser.add_argument("--json", action="store_true", help="one JSON line per run instead of the report")
    parser.add_argument("--report", metavar="FILE", help="no run: the report of the JSON lines in FILE")
    add_gc_option(parser)
    args = parser.parse_args(argv)
    if args.report:
        lines = Path(args.report).read_text().splitlines()
        print(report([json.loads(line) for line in lines if line.startswith("{")]))
        return
    args.placement = "dynamic"  # bench_failover's set-up: Divided, dynamicWeight AvailableReplicas
    if args.database_url and args.runs > 1:
        parser.error("--runs needs a fresh database per run: leave --database-url out")
    results = run_series(args, run_once)
    if not args.json:
        print(report(results))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
