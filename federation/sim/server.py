"""Running a simulator: a uvicorn server on a socket we bind ourselves, in a thread or in the foreground.

Invariants:
- The socket is bound before the server starts, so the URL (and the kubeconfig naming it) is known at once,
  also with port 0.
- ``run_simulator_in_thread`` returns only once the server accepts connections; ``stop`` returns only once
  it has shut down (or raises after the timeout).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from federation.listening import SERVER_IDLE_SECONDS, bind_socket
from federation.sim.app import SimApp, build_app
from federation.sim.cluster import SimCluster
from federation.sim.config import Faults, SimulatorConfig
from federation.tlsfiles import TlsFiles, make_tls


def make_kubeconfig(name: str, url: str, token: str, ca_data: str | None = None) -> dict[str, Any]:
    """A kubeconfig with one cluster, user and context, all named ``name``."""
    cluster: dict[str, Any] = {"server": url}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }


@dataclass
class Simulator:
    """A configured, not yet running simulator: its cluster state, app, and bound socket."""

    config: SimulatorConfig
    # The simulated cluster's time (readiness, restarts); tests pass a fake one.
    clock: Callable[[], float] = time.time
    cluster: SimCluster = field(init=False)
    faults: Faults = field(init=False)
    sock: socket.socket = field(init=False)
    server: uvicorn.Server = field(init=False)
    tls: TlsFiles | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.faults = Faults(self.config)
        self.cluster = SimCluster(self.config, self.faults, self.clock)
        self.sock = bind_socket(self.config.host, self.config.port)
        app = build_app(self.cluster, self.faults, self.config.token)
        app.state.stopping = lambda: self.server.should_exit  # open watches end when the server stops
        ssl: dict[str, Any] = {}
        if self.config.tls:
            self.tls = make_tls(self.config.host, self.config.name)
            ssl = {"ssl_certfile": self.tls.cert_file, "ssl_keyfile": self.tls.key_file}
        uv_config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=1,
            timeout_keep_alive=SERVER_IDLE_SECONDS,  # as a kube-apiserver: probes reuse one connection
            **ssl,
        )
        self.server = uvicorn.Server(uv_config)

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    @property
    def kubeconfig(self) -> dict[str, Any]:
        ca_data = self.tls.ca_data if self.tls else None
        return make_kubeconfig(self.config.name, self.url, self.config.token, ca_data)

    def serve_forever(self) -> None:
        """Run in the calling thread until the server is told to exit (Ctrl-C in the foreground)."""
        try:
            self.server.run(sockets=[self.sock])
        except KeyboardInterrupt:
            pass  # uvicorn re-raises the captured Ctrl-C after its own clean shutdown
        finally:
            self.sock.close()


@dataclass
class RunningSimulator:
    """A simulator serving in a background thread."""

    sim: Simulator
    thread: threading.Thread

    @property
    def name(self) -> str:
        return self.sim.config.name

    @property
    def url(self) -> str:
        return self.sim.url

    @property
    def token(self) -> str:
        return self.sim.config.token

    @property
    def kubeconfig(self) -> dict[str, Any]:
        return self.sim.kubeconfig

    @property
    def cluster(self) -> SimCluster:
        return self.sim.cluster

    def set_faults(self, **changes: Any) -> dict[str, Any]:
        """Same keys as ``POST /_sim/faults``: down, latency_ms, error_rate, unhealthy, seed."""
        self.sim.faults.update(changes)
        return self.sim.faults.snapshot()

    def state(self) -> dict[str, Any]:
        return SimApp(self.sim.cluster, self.sim.faults, self.token).state()

    def stop(self, timeout: float = 10.0) -> None:
        # force_exit: idle keep-alive TLS connections would otherwise hold shutdown for the grace period.
        self.sim.server.should_exit = True
        self.sim.server.force_exit = True
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise RuntimeError(f"simulator {self.name} did not stop within {timeout}s")
        self.sim.sock.close()

    def __enter__(self) -> RunningSimulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_simulator_in_thread(
    config: SimulatorConfig, start_timeout: float = 10.0, clock: Callable[[], float] = time.time
) -> RunningSimulator:
    """Start a simulator in a daemon thread; returns once it accepts connections."""
    sim = Simulator(config, clock)
    thread = threading.Thread(target=sim.serve_forever, name=f"sim-{config.name}", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not sim.server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"simulator {config.name} failed to start")
        time.sleep(0.01)
    return RunningSimulator(sim, thread)
