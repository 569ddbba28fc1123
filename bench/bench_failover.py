"""Cluster failover at scale: 1,000 bindings moved off a failed cluster (issue 8, "Benchmark").

Set-up (not timed): a migrated database (Postgres by default, SQLite with ``--database-url sqlite:///...``
or ``--backend sqlite``), N clusters with Ready=True status and capacity written through the store, one
PropagationPolicy (Divided) and M Deployments; the detector, scheduler and execution controllers run
until every binding is scheduled with a share on the victim and its Works are written.

Timed: the victim's Ready condition turns False, written as the cluster status controller writes it
(status + the ``not-ready:NoSchedule`` taint, one transaction), then the controllers run in a loop, in
the order the runner's wake-ups chain them: ClusterTaintPolicy (adds ``not-ready:NoExecute`` by the
default policy of migration 0007) → taint manager (rate limit off, default toleration 0 s: eviction at
once) → scheduler → execution. The loop stops at the first pass in which no controller wrote anything;
the figure is the wall time up to the end of the last pass that wrote something. Every outcome is then
verified (not timed): no binding lists the victim, each has a graceful-eviction task for it, and its
Works are exactly one per target cluster with that cluster's replicas plus the victim's Work held by
the task.

Placements (``--placement``):
- ``dynamic`` (default): Divided, dynamicWeight AvailableReplicas over all clusters; the victim is the
  largest cluster (1,500 pods, the others 500), so Webster gives it the first seat of every binding
  (1-2 of its 10 replicas) and spreads the rest one per cluster. Re-placement keeps the survivors and
  places the missing replicas by capacity.
- ``static``: Divided, static weights 1:1:1:1:1 over the victim and four other clusters (2 replicas
  each); re-placement recomputes the weights over the four left (3/3/2/2), so two Works change per
  binding.

Prints a JSON line (``--json``) or a readable report: total seconds, bindings/s, SQL statements, and per
controller (phase) its wall and CPU time, writes and statements, and the passes one by one.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.engine import Engine

from federation import gc_tuning
from federation.controllers import cluster_status as status_controller
from federation.controllers.detector import Detector
from federation.controllers.execution import ExecutionController
from federation.controllers.runtime import Outcome, SystemClock
from federation.controllers.scheduler import Scheduler
from federation.controllers.taint_manager import TaintManager
from federation.controllers.taint_policy import TaintPolicyController
from federation.members.health import observed_ready
from federation.settings import FailoverSettings, ProcessSettings
from federation.store import migrate
from federation.store.clusters import ClusterRepository
from federation.store.db import UnitOfWork, make_engine
from federation.store.manifest import format_timestamp, join
from federation.store.repository import ObjectRepository
from federation.store.tables import BindingTargetClusterRow, ResourceBindingRow, WorkRow

PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
CLUSTER_API = "cluster.karmada.io/v1alpha1"
NAMESPACE = "default"
VICTIM = "member000"
APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
MAX_PASSES = 200
# PROFILE_ALL=1 keeps the profile's library frames (the store's time inside SQLAlchemy and the driver).
SHOW_ALL = bool(os.environ.get("PROFILE_ALL"))


# -- objects ---------------------------------------------------------------------------------------------


def cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_API,
        "kind": "Cluster",
        "metadata": {"name": name, "labels": {"bench": "failover"}},
        "spec": {"syncMode": "Push", "apiEndpoint": f"https://{name}:6443"},
    }


def cluster_status(pods: int, cpu: str) -> dict[str, Any]:
    return {
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": ""}],
        "apiEnablements": APIS,
        "resourceSummary": {"allocatable": {"cpu": cpu, "memory": "4Ti", "pods": str(pods)}},
    }


def deployment(name: str, replicas: int) -> dict[str, Any]:
    container = {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def placement(kind: str, names: list[str]) -> dict[str, Any]:
    if kind == "dynamic":
        return {
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            }
        }
    chosen = names[:5]  # the victim and four others
    return {
        "clusterAffinity": {"clusterNames": chosen},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [{"targetCluster": {"clusterNames": [n]}, "weight": 1} for n in chosen]
            },
        },
    }


def policy(kind: str, names: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "bench", "namespace": NAMESPACE},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": placement(kind, names),
        },
    }


# -- statement counting ----------------------------------------------------------------------------------


@dataclass
class StatementCounter:
    """Statements sent through the engine per phase (transaction control left out)."""

    phase: str = "setup"
    counts: dict[str, int] = field(default_factory=dict)

    def attach(self, engine: Engine) -> None:
        event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if not statement.lstrip().upper().startswith(TRANSACTION_CONTROL):
            self.counts[self.phase] = self.counts.get(self.phase, 0) + 1


# -- the run ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One controller's reconcile in one pass: wall and CPU seconds, writes, SQL statements, and the seconds
    the cyclic garbage collector ran in it (``GC_CLOCK``)."""

    seconds: float
    cpu: float
    writes: int
    statements: int
    gc: float = 0.0


class GcClock:
    """Seconds spent in CPython's cyclic garbage collector since the process started (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


GC_CLOCK = GcClock()


class Bench:
    def __init__(self, url: str, args: argparse.Namespace) -> None:
        self.args = args
        migrate.upgrade(url)
        self.engine = make_engine(url)
        self.uow = UnitOfWork.for_engine(self.engine)
        self.clock = SystemClock()
        self.counter = StatementCounter()
        self.counter.attach(self.engine)
        self.names = [f"member{i:03d}" for i in range(args.clusters)]
        self.settings = FailoverSettings(
            default_not_ready_toleration_seconds=0,
            default_unreachable_toleration_seconds=0,
            eviction_rate_per_second=0,
        )
        toleration = (
            self.settings.default_not_ready_toleration_seconds,
            self.settings.default_unreachable_toleration_seconds,
        )
        self.detector = Detector(self.uow, self.clock, "bench", default_toleration_seconds=toleration)
        self.scheduler = Scheduler(self.uow, self.clock, "bench")
        self.execution = ExecutionController(self.uow, self.clock)
        self.taint_policy = TaintPolicyController(self.uow, self.clock)
        self.taint_manager = TaintManager(self.uow, self.clock, self.settings)

    def close(self) -> None:
        self.engine.dispose()

    # -- set-up ----------------------------------------------------------------------------------------

    def setup(self) -> float:
        start = time.perf_counter()
        with self.uow() as session:
            repo = ObjectRepository(session, "Cluster", CLUSTER_API)
            for name in self.names:
                repo.create(cluster(name))
                big = name == VICTIM and self.args.placement == "dynamic"
                repo.update_status("", name, cluster_status(1500 if big else 500, "192" if big else "64"))
        with self.uow() as session:
            ObjectRepository(session, "PropagationPolicy", "policy.karmada.io/v1alpha1").create(
                policy(self.args.placement, self.names)
            )
            templates = ObjectRepository(session, "Deployment", "apps/v1")
            for index in range(self.args.bindings):
                templates.create(deployment(f"app{index:04d}", self.args.replicas))
        for _ in range(MAX_PASSES):
            wrote = [c.reconcile().processed for c in (self.detector, self.scheduler, self.execution)]
            if not any(wrote):
                break
        # The failover controllers have been running all along: nothing tainted, nothing to do.
        self.taint_policy.reconcile()
        self.taint_manager.reconcile()
        return time.perf_counter() - start

    # -- the measured part -----------------------------------------------------------------------------

    def fail_victim(self) -> None:
        """What the cluster status controller writes when the victim's probes fail (its ``_write``)."""
        stamp = format_timestamp(self.clock.now())
        ready = observed_ready(False, False, "connection refused")
        with self.uow() as session:
            repo = ClusterRepository(session)
            fresh = repo.get(VICTIM)
            assert fresh is not None
            verdict = status_controller.Verdict(VICTIM, fresh["metadata"]["uid"], ready)
            status, taints = status_controller.plan(fresh, verdict, stamp)
            assert status is not None and taints is not None
            repo.objects.update_status("", VICTIM, status)
            repo.set_taints(VICTIM, taints)

    def failover(self) -> dict[str, Any]:
        controllers: dict[str, Callable[[], Outcome]] = {
            "taint": self.taint_policy.reconcile,
            "evict": self.taint_manager.reconcile,
            "reschedule": self.scheduler.reconcile,
            "works": self.execution.reconcile,
        }
        passes: list[dict[str, Step]] = []
        self.counter.phase = "ready"
        start = time.perf_counter()
        self.fail_victim()
        done_at = time.perf_counter()
        while len(passes) < MAX_PASSES:
            steps = {name: self._step(name, reconcile) for name, reconcile in controllers.items()}
            passes.append(steps)
            if not any(step.writes for step in steps.values()):
                break  # a pass that wrote nothing: converged (this last pass is not in the figure)
            done_at = time.perf_counter()
        self.counter.phase = "verify"
        total = done_at - start
        working = [p for p in passes if any(step.writes for step in p.values())]
        idle = passes[len(working) :]
        return {
            "backend": self.engine.dialect.name,
            "placement": self.args.placement,
            "clusters": self.args.clusters,
            "bindings": self.args.bindings,
            "seconds": round(total, 3),
            "bindings_per_second": round(self.args.bindings / total, 1),
            "passes": len(working),
            "statements": self.counter.counts.get("ready", 0) + _sum(working, "statements"),
            "phases": {name: _totals(working, name) for name in controllers},
            "idle_pass": {name: _totals(idle, name) for name in controllers},
            "pass_log": [{name: list(_values(step)) for name, step in p.items()} for p in passes],
        }

    def _step(self, name: str, reconcile: Callable[[], Outcome]) -> Step:
        self.counter.phase = name
        statements = self.counter.counts.get(name, 0)
        wall, cpu, collector = time.perf_counter(), time.process_time(), GC_CLOCK.seconds
        wrote = reconcile().processed
        return Step(
            time.perf_counter() - wall,
            time.process_time() - cpu,
            wrote,
            self.counter.counts.get(name, 0) - statements,
            GC_CLOCK.seconds - collector,
        )

    # -- verification (not timed) ----------------------------------------------------------------------

    def check(self, *, before: bool) -> dict[str, int]:
        """Raise unless every binding is where it should be and its Works match; returns a tally."""
        with self.uow() as session:
            bindings = {
                row.id: join(row)
                for row in session.scalars(select(ResourceBindingRow).order_by(ResourceBindingRow.id))
            }
            works: dict[int, list[dict[str, Any]]] = {}
            for row in session.scalars(select(WorkRow)):
                works.setdefault(int(row.binding_id or 0), []).append(join(row))
            on_victim = session.scalar(
                select(func.count()).where(BindingTargetClusterRow.cluster_name == VICTIM)
            )
        if len(bindings) != self.args.bindings:
            raise SystemExit(f"expected {self.args.bindings} bindings, found {len(bindings)}")
        tally = {"works": 0, "held": 0, "on_victim": int(on_victim or 0)}
        for binding_id, binding in bindings.items():
            name = binding["metadata"]["name"]
            spec = binding["spec"]
            target = {c["name"]: int(c.get("replicas") or 0) for c in spec.get("clusters") or []}
            if sum(target.values()) != self.args.replicas:
                raise SystemExit(f"{name}: placement {target} does not hold {self.args.replicas} replicas")
            tasks = {t["fromCluster"] for t in spec.get("gracefulEvictionTasks") or []}
            if before and VICTIM not in target:
                raise SystemExit(f"{name}: no share on the victim before the failure: {target}")
            if not before and (VICTIM in target or tasks != {VICTIM}):
                raise SystemExit(f"{name}: still on the victim or no eviction task: {target} {tasks}")
            live = {
                w["metadata"]["namespace"].removeprefix("karmada-es-"): w
                for w in works.get(binding_id, [])
                if not w["metadata"].get("deletionTimestamp")
            }
            expected = set(target) | (set() if before else {VICTIM})
            if set(live) != expected:
                raise SystemExit(f"{name}: Works on {sorted(live)}, expected {sorted(expected)}")
            for cluster_name, replicas in target.items():
                manifest = live[cluster_name]["spec"]["workload"]["manifests"][0]
                if manifest["spec"]["replicas"] != replicas:
                    raise SystemExit(f"{name}: Work on {cluster_name} has the wrong replicas")
            tally["works"] += len(target)
            tally["held"] += len(live) - len(target)
        return tally


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


# -- databases -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def database(args: argparse.Namespace) -> Iterator[str]:
    """The URL to run on: given, or a fresh Postgres database (dropped after), or a temporary SQLite file."""
    if args.database_url:
        yield args.database_url
    elif args.backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="bench-failover-") as directory:
            yield f"sqlite:///{Path(directory) / 'federation.db'}"
    else:
        import psycopg

        admin = args.pg_admin_url.replace("postgresql+psycopg://", "postgresql://", 1)
        name = f"bench_failover_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{args.pg_admin_url.rpartition('/')[0]}/{name}"
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_once(args: argparse.Namespace) -> dict[str, Any]:
    with database(args) as url:
        bench = Bench(url, args)
        try:
            setup_seconds = bench.setup()
            before = bench.check(before=True)
            profiler = _profiler(args)
            result = bench.failover()
            if profiler is not None:
                profiler.stop()
                Path(args.profile).write_text(
                    profiler.output_text(unicode=True, color=False, show_all=SHOW_ALL)
                )
            after = bench.check(before=False)
        finally:
            bench.close()
    result["setup_seconds"] = round(setup_seconds, 1)
    result["works_before"], result["works_after"], result["held"] = (
        before["works"],
        after["works"],
        after["held"],
    )
    return result


def _profiler(args: argparse.Namespace) -> Any:
    if not args.profile:
        return None
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001)
    profiler.start()
    return profiler


def report(results: list[dict[str, Any]]) -> str:
    middle = sorted(results, key=lambda r: r["seconds"])[len(results) // 2]
    lines = [
        f"{middle['backend']} (gc: {middle.get('gc', 'cpython')}), {middle['placement']}: "
        f"{middle['clusters']} clusters, "
        f"{middle['bindings']} bindings (set-up {middle['setup_seconds']} s; "
        f"{middle['works_before']} Works before, {middle['works_after']} after + {middle['held']} held)",
        f"runs: {', '.join(str(r['seconds']) for r in results)} s; median "
        f"{statistics.median(r['seconds'] for r in results):.2f} s (the median run below)",
        "",
        "| phase | wall s | CPU s | of it the collector, s | writes | SQL statements |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, phase in middle["phases"].items():
        lines.append(
            f"| {name} | {phase['seconds']:.2f} | {phase['cpu']:.2f} | {phase.get('gc', 0):.2f} "
            f"| {phase['writes']:,} "
            f"| {phase['statements']:,} |"
        )
    lines.append(
        f"| **total** | **{middle['seconds']:.2f}** | | | {middle['bindings_per_second']:,} bindings/s "
        f"| {middle['statements']:,} |"
    )
    idle = middle["idle_pass"]
    lines.append(
        f"\n{middle['passes']} pass(es) to converge; the idle pass that confirms it (not in the total): "
        + ", ".join(f"{name} {phase['seconds']:.2f} s" for name, phase in idle.items())
    )
    for index, row in enumerate(middle["pass_log"], 1):
        lines.append(
            f"  pass {index}: "
            + ", ".join(f"{k} {wall:.2f} s/{writes} writes" for k, (wall, _, writes, _) in row.items())
        )
    return "\n".join(lines)


def run_series(
    args: argparse.Namespace, run: Callable[[argparse.Namespace], dict[str, Any]]
) -> list[dict[str, Any]]:
    """``args.runs`` runs of ``run``; with ``--json`` each result is printed as one line as soon as it ends
    (a long series can be read while it runs). The collector is tuned as `serve` tunes it once started
    (``--gc server``, the default), before the first set-up, or left at CPython's (``--gc cpython``)."""
    if args.gc == "server":
        process = ProcessSettings()
        gc_tuning.tune(process.gc_thresholds, freeze=process.gc_freeze_at_start)
    results = []
    for _ in range(args.runs):
        result = run(args)
        result["gc"] = args.gc
        results.append(result)
        if args.json:
            print(json.dumps(result), flush=True)
    return results


def print_runs(
    results: list[dict[str, Any]], heading: str, columns: list[str], median_of: str, median_label: str
) -> None:
    """A series' figures as a table (a heading, one row per run), and the median of one column."""
    print(heading)
    print(" | ".join(columns))
    for result in results:
        print(" | ".join(str(result[c]) for c in columns))
    if len(results) > 1:
        print(f"{median_label}: {statistics.median(r[median_of] for r in results)}")


def add_gc_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gc",
        choices=("server", "cpython"),
        default="server",
        help="the garbage collector as `serve` runs it (process settings), or CPython's defaults",
    )


def add_series_options(parser: argparse.ArgumentParser, pg_admin_url: str) -> None:
    """What a benchmark run by ``run_series`` on one Postgres server takes besides its own options:
    ``--runs`` (a fresh database and server each), ``--pg-admin-url``, ``--json``, ``--gc``."""
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--pg-admin-url", default=pg_admin_url)
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    add_gc_option(parser)


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
    parser.add_argument("--placement", choices=("dynamic", "static"), default="dynamic")
    parser.add_argument("--runs", type=int, default=1, help="fresh database per run; the median is quoted")
    parser.add_argument("--profile", help="write a pyinstrument profile of the timed part to this file")
    parser.add_argument("--json", action="store_true", help="one JSON line per run instead of the report")
    add_gc_option(parser)
    args = parser.parse_args(argv)
    if args.database_url and args.runs > 1:
        parser.error("--runs needs a fresh database per run: leave --database-url out")
    results = run_series(args, run_once)
    if not args.json:
        print(report(results))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
