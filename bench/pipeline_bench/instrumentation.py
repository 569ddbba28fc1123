"""Inside each ``serve`` process (``instrumented_serve``, the subprocess entry point): SQL statements and
transactions counted per label (the controller running, or api/lease/cluster-lease-renewal/other) by
SQLAlchemy listeners, and the controllers' runs and thread CPU by a wrapper around the runner's job method;
written as JSON to the file ``PIPELINE_BENCH_COUNTS`` names. ``pg_stat_statements`` would need
``shared_preload_libraries``, which a shared server cannot be restarted for.

Where ``serve`` runs its controllers in a child process of its own (``federation.cli.controller_process``,
Postgres with ``controllers.separate_process``), that child is started through ``instrumented_serve`` too
(``CHILD_COMMAND`` pointed at it) and writes its counters to a file of its own beside the parent's
(``child_counts_path``). A child that the parent restarts takes over what its predecessor's file held, so
the file stays cumulative (less what the predecessor counted after its last write, at most half a second's
worth when it was killed); ``pids`` lists every child that wrote it. A commit without that module (a
benchmark anchor) runs its controllers in the one process, counted as before.

Only the standard library at import: this module is imported before ``federation`` runs.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.abc
import importlib.util
import json
import os
import runpy
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COUNTS_ENV = "PIPELINE_BENCH_COUNTS"
# Set by a ``serve`` process for the controller process it starts: that child's counters are its own.
ROLE_ENV = "PIPELINE_BENCH_ROLE"
CONTROLLERS_ROLE = "controllers"


def child_counts_path(path: Path) -> Path:
    """Where the controller process of the ``serve`` process counting into ``path`` counts."""
    return path.with_name(path.name.removesuffix(".json") + ".controllers.json")


@dataclass
class ControllerTally:
    """One controller's runs in one server process: how often, how many with work, its thread CPU."""

    runs: int = 0
    busy_runs: int = 0
    processed: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0


class ProcessCounters:
    """SQL statements and transactions per label (the controller running, or api/lease/other), and the
    controllers' runs; written as JSON to a file that the benchmark reads, twice a second and at exit."""

    def __init__(self, path: Path, serves_api: bool = True) -> None:
        self.path = path
        self.serves_api = serves_api  # False in a controller process: its main thread is no API
        self._lock = threading.Lock()
        self._local = threading.local()
        self.statements: dict[str, dict[str, int]] = {}
        self.commits: dict[str, int] = {}
        self.rollbacks: dict[str, int] = {}
        self.controllers: dict[str, ControllerTally] = {}
        self.pids = [os.getpid()]

    def carry_over(self) -> None:
        """Start from what a previous process left in the same file (a restarted controller process)."""
        try:
            previous = json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return
        if previous.get("pid") == os.getpid():
            return
        self.statements = {k: dict(v) for k, v in previous.get("statements", {}).items()}
        self.commits = dict(previous.get("commits", {}))
        self.rollbacks = dict(previous.get("rollbacks", {}))
        self.controllers = {k: ControllerTally(**v) for k, v in previous.get("controllers", {}).items()}
        self.pids = [*previous.get("pids", [previous.get("pid")]), os.getpid()]

    def label(self) -> str:
        phase: str | None = getattr(self._local, "phase", None)
        if phase:
            return phase
        name = threading.current_thread().name
        if self.serves_api and (name == "MainThread" or name.startswith("AnyIO worker")):
            return "api"
        return "other:" + name.rstrip("0123456789_-")

    def on_statement(self, *event: Any) -> None:
        statement: str = event[2]
        text = statement.lstrip()
        verb = text.split(None, 1)[0].upper() if text else "?"
        if verb == "WITH":
            upper = text.upper()
            verb = "WITH-WRITE" if any(f" {w} " in upper for w in ("INSERT", "UPDATE", "DELETE")) else "WITH"
        label = self.label()
        with self._lock:
            verbs = self.statements.setdefault(label, {})
            verbs[verb] = verbs.get(verb, 0) + 1

    def on_commit(self, *_: Any) -> None:
        self._add(self.commits)

    def on_rollback(self, *_: Any) -> None:
        self._add(self.rollbacks)

    def _add(self, counts: dict[str, int]) -> None:
        label = self.label()
        with self._lock:
            counts[label] = counts.get(label, 0) + 1

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        previous = getattr(self._local, "phase", None)
        self._local.phase = name
        try:
            yield
        finally:
            self._local.phase = previous

    def record_run(self, name: str, processed: int | None, cpu: float, wall: float) -> None:
        with self._lock:
            tally = self.controllers.setdefault(name, ControllerTally())
            tally.runs += 1
            tally.busy_runs += 1 if processed else 0
            tally.processed += processed or 0
            tally.cpu_s += cpu
            tally.wall_s += wall

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pid": os.getpid(),
                "pids": list(self.pids),
                "statements": {k: dict(v) for k, v in self.statements.items()},
                "commits": dict(self.commits),
                "rollbacks": dict(self.rollbacks),
                "controllers": {k: vars(v).copy() for k, v in self.controllers.items()},
            }

    def dump(self) -> None:
        scratch = self.path.with_name(self.path.name + ".tmp")
        scratch.write_text(json.dumps(self.snapshot()))
        os.replace(scratch, self.path)

    def dump_every(self, seconds: float) -> None:
        while True:
            time.sleep(seconds)
            self.dump()


class _TrackedReconciler:
    """A reconciler as the runner sees it, whose ``reconcile`` also reports its outcome and CPU."""

    def __init__(self, inner: Any, counters: ProcessCounters) -> None:
        self._inner = inner
        self._counters = counters
        self.name: str = inner.name
        self.interval_seconds: float = inner.interval_seconds
        self.watches: frozenset[str] = inner.watches

    def reconcile(self) -> Any:
        from . import heap

        cpu, wall = time.thread_time(), time.perf_counter()
        memory = heap.PASSES.start() if heap.ENABLED else None
        processed: int | None = None
        try:
            with self._counters.phase(self.name):
                outcome = self._inner.reconcile()
            processed = int(outcome.processed)
            return outcome
        finally:
            if memory is not None:
                heap.PASSES.end(self.name, memory)
            self._counters.record_run(
                self.name, processed, time.thread_time() - cpu, time.perf_counter() - wall
            )


def _install(counters: ProcessCounters, api: bool = True) -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from federation.controllers import runtime

    event.listen(Engine, "before_cursor_execute", counters.on_statement)
    event.listen(Engine, "commit", counters.on_commit)
    event.listen(Engine, "rollback", counters.on_rollback)
    runner: Any = runtime.ControllerRunner
    run = runner._run

    def tracked_run(self: Any, reconciler: Any) -> None:
        run(self, _TrackedReconciler(reconciler, counters))

    runner._run = tracked_run
    for method, label in (("_hold_lease", "lease"), ("_renew_claims", "claim-renewal")):
        original = getattr(runner, method, None)
        if original is not None:
            setattr(runner, method, _labelled(original, label, counters))
    if api:  # not in a controller process: it serves no API (nor imports it for the bench's sake)
        _after_import("federation.api.agent", lambda: _label_lease_renewals(counters))


def _label_lease_renewals(counters: ProcessCounters) -> None:
    """The agents' heartbeats (``--lease-clusters``) apart from the rest of the API's statements."""
    from federation.api import agent

    renew: Any = getattr(agent, "_renew", None)
    if renew is not None:
        agent._renew = _labelled(renew, "cluster-lease-renewal", counters)


def _after_import(name: str, then: Callable[[], None]) -> None:
    """Call ``then`` once the module ``name`` has been executed (at once if it has been already), before
    the statement that imported it goes on."""
    if name in sys.modules:
        then()
        return

    class AfterImport(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)  # by the other finders
            loader: Any = spec.loader if spec is not None else None
            if loader is None:
                then()
                return spec
            execute = loader.exec_module

            def exec_module(module: Any) -> None:
                execute(module)
                then()

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, AfterImport())


def _labelled(method: Callable[..., Any], label: str, counters: ProcessCounters) -> Callable[..., Any]:
    def wrapper(self: Any, *args: Any) -> Any:
        with counters.phase(label):
            return method(self, *args)

    return wrapper


def _instrument_controller_process(counts: Path) -> None:
    """In a ``serve`` process: the controller process it may start runs ``instrumented_serve`` too, counting
    into a file of its own (and, with ``--heap-dir``, answering heap requests in a directory of its own).
    Nothing changes for a commit without ``federation.cli.controller_process``."""
    try:
        from federation.cli import controller_process
    except ImportError:
        return
    from .heap import HEAP_DIR_ENV
    from .processes import entry_command

    entry = entry_command("instrumentation", "instrumented_serve")
    command: Any = getattr(controller_process, "CHILD_COMMAND", None)
    if isinstance(command, list):
        command[:] = entry  # in place: also for a module that imported the list itself
    else:
        controller_process.CHILD_COMMAND = entry
    # Read once by this process already (its counters, its heap thread); what the children inherit.
    os.environ[COUNTS_ENV] = str(child_counts_path(counts))
    os.environ[ROLE_ENV] = CONTROLLERS_ROLE
    heap_dir = os.environ.get(HEAP_DIR_ENV)
    if heap_dir:
        os.environ[HEAP_DIR_ENV] = str(Path(heap_dir) / CONTROLLERS_ROLE)


def instrumented_serve() -> None:
    """``python -m federation`` (argv as given) with the counters installed; the subprocess entry point, of
    ``serve`` and of the controller process ``serve`` starts."""
    from .heap import install_from_env

    install_from_env()  # tracemalloc and heap reports on request, with --heap-dir only
    child = os.environ.get(ROLE_ENV) == CONTROLLERS_ROLE
    counts = Path(os.environ[COUNTS_ENV])
    counters = ProcessCounters(counts, serves_api=not child)
    if child:
        counters.carry_over()
    if child:
        _install(counters, api=False)
    else:
        _instrument_controller_process(counts)
        # Counted from the moment `serve` imports its server module, not before: importing the store and
        # the API here would make the parent pay for them before it launches its controllers' child, where
        # `serve` itself launches the child first (``cmd_serve``) and imports them while the child starts
        # (the API's modules after it has handed the child its settings).
        _after_import("federation.cli.server", lambda: _install(counters, api=True))
    threading.Thread(target=counters.dump_every, args=(0.5,), name="bench-counters", daemon=True).start()
    atexit.register(counters.dump)
    runpy.run_module("federation", run_name="__main__", alter_sys=True)
