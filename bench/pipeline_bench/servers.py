"""The ``federation serve`` processes: each started through ``instrumentation.instrumented_serve`` (plain
HTTP on its own port, its own data directory and log), asked whether it is ready, measured (CPU, RSS,
its counters) and stopped by a signal. Controller replicas are named ``serve0``, ``serve1``…; API-only
replicas (``serve --no-controllers``) ``api0``, ``api1``…

A replica is its ``serve`` process and the child processes it starts: where the controllers run in a
process of their own (``federation.cli.controller_process``), that child counts into a file of its own
(``instrumentation``); a replica's counters, CPU and RSS add up both, and the split is kept (``by_process``:
the ``serve`` process, its children). The children's CPU is that of the live ones (``/proc``) plus that of
those that ended and were waited for (the parent's ``cutime``/``cstime``): a restarted controller process's
predecessors count too."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from . import heap
from .heap import HEAP_DIR_ENV
from .instrumentation import CONTROLLERS_ROLE, COUNTS_ENV, child_counts_path
from .processes import (
    child_pids,
    ended,
    entry_command,
    free_port,
    process_and_reaped_cpu_seconds,
    process_cpu_seconds,
    rss_mb,
    wait_for,
)

# `serve` with the API only: the process never takes the leader lease nor runs a controller.
NO_CONTROLLERS = "--no-controllers"


class Replica:
    """One ``federation serve`` process: plain HTTP on its own port, its own data directory and log, all
    named after it (``name``); ``args`` follow ``serve --data-dir …`` (``NO_CONTROLLERS``: an API replica)."""

    def __init__(self, workdir: Path, name: str, env: dict[str, str], args: tuple[str, ...] = ()) -> None:
        self.name = name
        self.args = args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = workdir / name
        self.env = {**env, "FEDERATION_API__PORT": str(self.port)}
        self.log_path = workdir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        # Every controller process that wrote counters, over every start (restarts show as more pids).
        self.controller_pids: set[int] = set()

    @property
    def counts_path(self) -> Path:
        return self.data_dir.parent / f"{self.name}.start{self.starts}.counts.json"

    @property
    def child_counts_path(self) -> Path:
        """The counters of this start's controller process (none where the controllers run in-process)."""
        return child_counts_path(self.counts_path)

    @property
    def api_only(self) -> bool:
        return NO_CONTROLLERS in self.args

    def start(self) -> None:
        self.starts += 1
        env = {**self.env, COUNTS_ENV: str(self.counts_path)}
        entry = entry_command("instrumentation", "instrumented_serve")  # `python -m federation`, counted
        command = [*entry, "serve", "--data-dir", str(self.data_dir), *self.args]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        if not self.alive():
            raise RuntimeError(f"{self.name} exited; its log:\n{self.log_tail()}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def admin_token(self) -> str:
        import yaml

        config = yaml.safe_load((self.data_dir / "federation.kubeconfig").read_text())
        return str(config["users"][0]["user"]["token"])

    def children(self) -> list[int]:
        """The live child processes of the ``serve`` process: its controller process, if it runs one."""
        return child_pids(self.pid) if self.alive() else []

    def cpu_by_process(self) -> tuple[float, float]:
        """CPU seconds of the ``serve`` process, and of its children: the live ones, and the ones that
        ended and were waited for (a restarted controller process's predecessors)."""
        own, reaped = process_and_reaped_cpu_seconds(self.pid)
        live = 0.0
        for pid in self.children():
            try:
                live += process_cpu_seconds(pid)
            except OSError:  # ended and waited for since the first read: in ``reaped`` now
                own, reaped = process_and_reaped_cpu_seconds(self.pid)
        return own, reaped + live

    def cpu_seconds(self) -> float:
        return sum(self.cpu_by_process())

    def rss_by_process(self) -> tuple[float, float | None]:
        """VmRSS (MB) of the ``serve`` process, and of its live children (None: it has none)."""
        own = rss_mb(self.pid)
        sizes: list[float] = []
        for pid in self.children():
            try:
                sizes.append(rss_mb(pid))
            except OSError:  # ended meanwhile
                continue
        return own, (sum(sizes) if sizes else None)

    def rss_mb(self) -> float:
        own, children = self.rss_by_process()
        return own + (children or 0.0)

    def heap(self, label: str, trim: bool = False) -> dict[str, Any] | None:
        """A heap report of this server (``heap``), or None when it runs without ``--heap-dir``; with a
        controller process, that process's report under ``controller_process``."""
        where = self.env.get(HEAP_DIR_ENV)
        if not where:
            return None
        report = heap.request(Path(where), label, trim)
        child = _read_counts(self.child_counts_path)
        if child is not None and child.get("pid") in self.children():  # instrumented, so it answers
            report["controller_process"] = heap.request(Path(where) / CONTROLLERS_ROLE, label, trim)
        return report

    def counts_by_process(self) -> list[dict[str, Any]]:
        """The counters of this start: the ``serve`` process's, and its controller process's when it runs
        one (cumulative over that process's restarts)."""
        empty: dict[str, Any] = {"statements": {}, "commits": {}, "rollbacks": {}, "controllers": {}}
        snapshots = [_read_counts(self.counts_path) or empty]
        child = _read_counts(self.child_counts_path)
        if child is not None:
            self.controller_pids.update(p for p in child.get("pids", []) if p is not None)
            snapshots.append(child)
        return snapshots

    def stop(self, timeout: float, sig: signal.Signals = signal.SIGTERM) -> float | None:
        """``sig``, then SIGKILL after ``timeout``; seconds until it and its children (a controller process
        ends when its parent does) exited (None: one had to be killed)."""
        if not self.alive():
            return 0.0
        assert self.process is not None
        children = self.children()
        start = time.perf_counter()
        self.process.send_signal(sig)
        killed = False
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            killed = True
        left = max(5.0, timeout - (time.perf_counter() - start))
        try:
            wait_for(lambda: all(ended(pid) for pid in children), left, f"{self.name}'s children", 0.05)
        except RuntimeError:
            for pid in children:
                if not ended(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            killed = True
        return None if killed else round(time.perf_counter() - start, 2)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def _read_counts(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
