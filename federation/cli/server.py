"""The composition root: builds the database, secret box, API app and controllers of one `serve`/`up`
process, and runs them until stopped.

First start on an empty database: the schema is migrated, an admin token is created, and the kubeconfig
``<data_dir>/federation.kubeconfig`` (the CA, the server URL and that token, mode 0600) is written, so the
CLI, kubectl and the Python client work without flags. Later starts keep the token the kubeconfig holds: it
was shown once and is not stored in plaintext. HTTPS by default (``cli.serving``).

Invariants:
- The data directory is 0700 (created so, tightened if an older version left it open); the SQLite file and
  the key file are 0600 (``store.db``, ``store.crypto``).
- A process whose encryption key is not the one the database was written with stops before serving
  (``KeyMismatch``, one line), instead of failing to decrypt every member's credentials.
- Every session carries the key, so Secret data is sealed at rest (``store.sealing``).
- Stopping runs every stop hook, last added first (the controllers stop and release the leader lease, the
  member clients close, then the engine is disposed), also when one of them fails, when the start fails
  half-way, and when `serve` is stopped by SIGINT or SIGTERM (``request_stop``): a successor replica then
  takes the lease at its next try instead of after the lease duration.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from federation.cli import serving
from federation.cli.controller_process import ControllerProcess
from federation.cli.process_setup import (  # re-exported: `serve`, `up` and the tests use them from here
    MALLOC_ARENAS,
    database_timeouts,
    key_source,
    secret_box,
    start_controllers,
    start_controllers_alone,
    tune_collector,
    tune_malloc,
)
from federation.controllers.runtime import ControllerRunner
from federation.listening import SERVER_IDLE_SECONDS, bind_socket
from federation.settings import Settings
from federation.store import migrate
from federation.store.db import UnitOfWork, autovacuum_off, make_engine, private_directory
from federation.store.keycheck import verify_key
from federation.store.tokens import TokenRepository
from federation.tlsfiles import TlsFiles

if TYPE_CHECKING:  # imported where used: `serve` hands its controllers' child the settings before these load
    import uvicorn
    from fastapi import FastAPI

    from federation.api.app import ApiContext

__all__ = [
    "MALLOC_ARENAS",
    "ServerProcess",
    "tune_malloc",
    "database_timeouts",
    "key_source",
    "secret_box",
    "start_controllers",
    "start_controllers_alone",
    "tune_collector",
]

log = logging.getLogger(__name__)


GRACEFUL_STOP_SECONDS = 5


def _ignore(_kind: str) -> None:
    """The notifier of an API server that runs without controllers."""


def bootstrap_admin_token(uow: UnitOfWork) -> str | None:
    """Create the first admin token when no token exists; its plaintext, or None when one existed."""
    with uow() as session:
        tokens = TokenRepository(session)
        if tokens.any():
            return None
        _, plaintext = tokens.create("admin", "admin")
        return plaintext


@dataclass
class ServerProcess:
    """One running control-plane process: the API server (and whatever `on_start` adds)."""

    settings: Settings
    # Where the kubeconfig is written; None: <data_dir>/federation.kubeconfig.
    kubeconfig_path: Path | None = None
    url: str = ""
    admin_token: str | None = None  # only on the first start: the token just created
    kubeconfig_token: str | None = None  # the token the kubeconfig carries (None: the user passes one)
    tls: TlsFiles | None = None  # None: plain HTTP (api.insecure_http)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _sock: socket.socket | None = None
    api_context: ApiContext | None = None
    run_controllers: bool = True
    # The controllers in a child process (``controller_process``; `serve` on Postgres), else in this one.
    controllers_apart: bool = False
    runner: ControllerRunner | None = None
    # The controllers' child process (`serve` may launch it before building this: ``launch``).
    controller_process: ControllerProcess | None = None
    stop_hooks: list[Callable[[], None]] = field(default_factory=list)
    _stop_signal: int | None = None  # the signal that asked `run` to stop
    _stopping: bool = False  # the stop hooks are running

    def prepare(self) -> ApiContext:
        """Migrate, load and verify the key, bootstrap the admin token; the context the app is built from."""
        if self.controller_process is not None:
            # Launched by `serve` before this was built: stopped with the rest if this start fails.
            self.stop_hooks.append(self.controller_process.stop)
        url = self.settings.resolved_database_url()
        private_directory(self.settings.data_dir)  # the kubeconfig and the CA's key live there too
        migrate.upgrade(url)
        box = secret_box(self.settings)
        pool = self.settings.database
        engine = make_engine(
            url, database_timeouts(self.settings), pool_size=pool.pool_size, max_overflow=pool.max_overflow
        )
        uow = UnitOfWork.for_engine(engine, box)
        try:
            verify_key(uow, box, key_source(self.settings))
            # A bad certificate stops the start here, before any controller runs.
            self.tls = serving.serving_tls(self.settings, self.settings.api.host)
        except BaseException:
            engine.dispose()
            raise
        if autovacuum_off(engine):
            log.warning(
                "the Postgres server runs with autovacuum off: %s; turn it on (autovacuum = on in "
                "postgresql.conf)",
                "the controllers' leader vacuums and analyzes this store's tables itself meanwhile"
                if self.settings.database.self_maintenance
                else "the Works and bindings tables will bloat and their queries slow down "
                "(database.self_maintenance is false)",
            )
        self.admin_token = bootstrap_admin_token(uow)
        self.kubeconfig_token = self.admin_token or serving.kept_admin_token(uow, self.kubeconfig_file)
        self.stop_hooks.append(engine.dispose)
        notify: Callable[[str], None] = _ignore
        if self.run_controllers and self.controllers_apart:
            if self.controller_process is None:
                self.controller_process = ControllerProcess(self.settings)
                self.stop_hooks.append(self.controller_process.stop)
            self.controller_process.start()  # the child gets its settings now: the database is ready for it
            notify = self.controller_process.wake
        elif self.run_controllers:
            self.runner = start_controllers(self.settings, uow, box)
            self.stop_hooks.append(self.runner.stop)
            notify = self.runner.wake
        # The API's modules (FastAPI, the routes, the schemas: ~1 s of a core) load only now, while the
        # controllers' child, which has its settings, starts its first passes on the other core.
        from federation.api.app import ApiContext

        self.api_context = ApiContext(self.settings, engine, uow, box, notify=notify)
        return self.api_context

    @property
    def kubeconfig_file(self) -> Path:
        return self.kubeconfig_path or self.settings.kubeconfig_path()

    def bind(self, app: FastAPI) -> None:
        import uvicorn

        api = self.settings.api
        try:
            self._sock = bind_socket(api.host, api.port)
        except OSError as exc:  # the message alone ("Address already in use") does not say which
            raise OSError(exc.errno, f"cannot listen on {api.host}:{api.port}: {exc.strerror}") from exc
        port = self._sock.getsockname()[1]
        self.url = serving.client_url(api, api.host, port, self.tls)
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            # The C parser (a dependency): h11, uvicorn's pure-Python default, cost a tenth of the API's CPU
            # per write (bench/RESULTS.md, "Template creates as column values").
            http="httptools",
            ssl_certfile=self.tls.cert_file if self.tls else None,
            ssl_keyfile=self.tls.key_file if self.tls else None,
            # A stop waits this long for requests in flight, not for idle keep-alive clients to leave.
            timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
            timeout_keep_alive=SERVER_IDLE_SECONDS,  # an agent's renewals reuse one connection
        )
        self._server = uvicorn.Server(config)
        server = self._server
        app.state.ctx.stopping = lambda: server.should_exit  # open watches end when the server stops
        serving.write_federation_kubeconfig(self.kubeconfig_file, self.url, self.tls, self.kubeconfig_token)

    def open(self) -> None:
        """Prepare (the controllers start here) and bind; when that fails, whatever started is stopped again
        (a port in use must not leave a process that holds the leader lease on its way out)."""
        try:
            context = self.prepare()
            from federation.api.app import create_app

            self.bind(create_app(context))
        except BaseException:
            self._run_stop_hooks()
            raise

    def request_stop(self, signum: int) -> None:
        """`serve`'s SIGINT/SIGTERM handler (``signals.stop_signals``, installed before `open`): the server
        stops serving and `run` returns after the stop hooks. A signal that comes before serving starts is
        kept, and `run` then only stops. A second Ctrl-C while the stop hooks run interrupts them (the
        usual way out of a stop that hangs); uvicorn's own handlers take the signals while it serves."""
        if self._stopping and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if self._stop_signal is None:
            self._stop_signal = signum
        if self._server is not None:
            self._server.should_exit = True

    def run(self) -> None:
        """Serve in this thread until stopped (``request_stop``), then run the stop hooks and return."""
        assert self._server is not None and self._sock is not None
        try:
            if self._stop_signal is None:
                self._server.run(sockets=[self._sock])
            else:
                self._sock.close()
        finally:
            self._stopping = True
            cause = f" on {signal.Signals(self._stop_signal).name}" if self._stop_signal else ""
            log.info("stopping%s: controllers, leader lease, member clients", cause)
            self._run_stop_hooks()
            log.info("stopped")

    def start_in_thread(self) -> None:
        assert self._server is not None and self._sock is not None
        server, sock = self._server, self._sock
        self._thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
        self._thread.start()
        _wait_started(server)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._run_stop_hooks()

    def _run_stop_hooks(self) -> None:
        # Each hook runs even when one before it failed: a lease that cannot be released (the database is
        # down) must not keep the engine from being disposed.
        while self.stop_hooks:
            hook = self.stop_hooks.pop()
            try:
                hook()
            except Exception:
                log.exception("stopping: %s failed", getattr(hook, "__qualname__", hook))


def _wait_started(server: uvicorn.Server, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or server.should_exit:
            raise RuntimeError("the API server did not start in time")
        time.sleep(0.01)


def build(
    settings: Settings, kubeconfig_path: Path | None = None, *, run_controllers: bool = True
) -> ServerProcess:
    process = ServerProcess(settings, kubeconfig_path, run_controllers=run_controllers)
    process.open()
    return process
