"""The member clusters: one simulator (TLS, as the tests run them) per process (``Member`` says why),
whose app counts the requests it answers by shape and the time it took to answer them."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .processes import entry_command, process_cpu_seconds, wait_for

_API_PREFIX = re.compile(r"^/(api/v1|apis/[^/]+/[^/]+)(/.*)?$")


def request_shape(method: str, path: str) -> str:
    """``GET /apis/apps/v1/namespaces/*/deployments/*``: the method and path with names starred."""
    match = _API_PREFIX.match(path)
    if match is None:
        return f"{method} {path}"
    parts = [p for p in (match.group(2) or "").split("/") if p]
    shaped: list[str] = []
    if len(parts) >= 2 and parts[0] == "namespaces":
        shaped += ["namespaces", "*"]
        parts = parts[2:]
    if parts:
        shaped.append(parts[0])
    if len(parts) > 1:
        shaped.append("*")
    shaped += parts[2:]
    return f"{method} /{match.group(1)}/{'/'.join(shaped)}".rstrip("/")


class RequestCounter:
    """Requests answered by the members, by shape, and the seconds the members took to answer them (in
    their app, lock waits included); shared by every member's ASGI wrapper."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.seconds: dict[str, float] = {}

    def add(self, shape: str, seconds: float) -> None:
        with self._lock:
            self.counts[shape] = self.counts.get(shape, 0) + 1
            self.seconds[shape] = self.seconds.get(shape, 0.0) + seconds

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)

    def seconds_snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self.seconds)


class CountingApp:
    """An ASGI app that counts each HTTP request, then hands it to the member's own app."""

    def __init__(self, app: Any, counter: RequestCounter) -> None:
        self.app = app
        self.counter = counter

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.counter.add(request_shape(scope["method"], scope["path"]), time.perf_counter() - start)


def member_main() -> None:
    """Entry point of a member subprocess: ``NAME NODES NODE_PODS DIR [LATENCY_MS]``. One simulator (TLS, as
    the tests run them) whose app is wrapped by a request counter; it writes ``DIR/NAME.kubeconfig.json``
    once it serves and ``DIR/NAME.counts.json`` twice a second. ``LATENCY_MS`` delays every answer (a
    member across a network; the simulator's own ``latency_ms``, which does not hold up other requests)."""
    from federation.sim import Simulator, SimulatorConfig

    name, nodes, node_pods, directory = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    latency_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    config = SimulatorConfig(
        name=name, nodes=nodes, node_cpu="64", node_pods=node_pods, ready_delay=0.2, latency_ms=latency_ms
    )
    sim = Simulator(config)
    counter = RequestCounter()
    sim.server.config.app = CountingApp(sim.server.config.app, counter)

    def publish() -> None:
        while not sim.server.started:
            time.sleep(0.01)
        _write_json(directory / f"{name}.kubeconfig.json", sim.kubeconfig)
        while True:
            _write_json(
                directory / f"{name}.counts.json",
                {"counts": counter.snapshot(), "seconds": counter.seconds_snapshot()},
            )
            time.sleep(0.5)

    threading.Thread(target=publish, name="bench-publish", daemon=True).start()
    sim.serve_forever()


def _write_json(path: Path, value: Any) -> None:
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(value))
    os.replace(scratch, path)


class Member:
    """One member cluster: a simulator in a process of its own (three in this process would share one
    GIL with the client threads, and their LISTs would starve each other's applies)."""

    def __init__(self, name: str, pods: int, directory: Path, latency_ms: int = 0) -> None:
        self.name = name
        self.directory = directory
        node_pods = 250
        nodes = max(2, math.ceil(pods * 1.5 / node_pods))  # room for half as many pods again
        command = [
            *entry_command("members", "member_main"),
            *(name, str(nodes), str(node_pods), str(directory), str(latency_ms)),
        ]
        self.log_path = directory / f"{name}.log"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def kubeconfig(self) -> dict[str, Any]:
        path = self.directory / f"{self.name}.kubeconfig.json"

        def written() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"member {self.name} exited: {self.log_path.read_text()[-2000:]}")
            return path.exists()

        wait_for(written, 30, f"member {self.name} to serve")
        return dict(json.loads(path.read_text()))

    def counts(self) -> tuple[dict[str, int], dict[str, float]]:
        try:
            found = json.loads((self.directory / f"{self.name}.counts.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}, {}
        return dict(found["counts"]), dict(found["seconds"])

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
