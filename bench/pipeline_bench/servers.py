"""The ``federation serve`` processes: each started through ``instrumentation.instrumented_serve`` (plain
HTTP on its own port, its own data directory and log), asked whether it is ready, measured (CPU, RSS,
its counters) and stopped by a signal. Controller replicas are named ``serve0``, ``serve1``…; API-only
replicas (``serve --no-controllers``) ``api0``, ``api1``…"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from . import heap
from .heap import HEAP_DIR_ENV
from .instrumentation import COUNTS_ENV
from .processes import entry_command, free_port, process_cpu_seconds

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

    @property
    def counts_path(self) -> Path:
        return self.data_dir.parent / f"{self.name}.start{self.starts}.counts.json"

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

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.pid)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def heap(self, label: str, trim: bool = False) -> dict[str, Any] | None:
        """A heap report of this server (``heap``), or None when it runs without ``--heap-dir``."""
        where = self.env.get(HEAP_DIR_ENV)
        return None if not where else heap.request(Path(where), label, trim)

    def counts(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.counts_path.read_text()))
        except (FileNotFoundError, json.JSONDecodeError):
            return {"statements": {}, "commits": {}, "rollbacks": {}, "controllers": {}}

    def stop(self, timeout: float, sig: signal.Signals = signal.SIGTERM) -> float | None:
        """``sig``, then SIGKILL after ``timeout``; seconds to the exit (None: it had to be killed)."""
        if not self.alive():
            return 0.0
        assert self.process is not None
        start = time.perf_counter()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
            return round(time.perf_counter() - start, 2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"
