"""A `serve`'s controllers in a process of their own, so the API never waits behind a controller pass.

Why: in one process the API's request threads and the controllers' passes share one GIL. A request
that comes back from a database round trip waits for whichever controller thread holds the GIL, once per
round trip, so under load a write of four statements took 140-270 ms at the median where it needs ~4 ms
of CPU (bench/RESULTS.md, "The controllers in a process of their own"). With the controllers in a child
process the API answers from a process that does nothing else.

How: ``ControllerProcess`` (in `serve`) starts ``federation controllers --wake-fd N`` with the settings as
JSON on its stdin, and keeps the write end of a pipe whose read end the child holds. `serve` launches the
child first thing (``launch``), before it imports the API, and hands it the settings (``start``) once the
database is migrated and the key verified: the child's imports (~1 s of a core) run beside the parent's
instead of after them, and a restart is in sync that much sooner. The API's write notifications
(``ApiContext.notify``) become lines on that pipe (``wake``), and the child wakes the controllers that
watch the kind, as the in-process runner did: a write is picked up at once, not at the next interval tick.

Invariants:
- The pipe is the child's lifeline: end of file (the parent stopped, or died of SIGKILL) stops the child
  as SIGTERM does: passes finish, the leader lease is released, so another replica leads at its next try.
  No controller process outlives its `serve`.
- A wake never blocks the API: the pipe is non-blocking and a wake that does not fit is dropped (the
  child is busy; its interval tick and idle probe find the write anyway). It writes under the lock that
  closing the pipe takes, so it never writes to a descriptor number reused by another file.
- A child that exits on its own (a crash, SIGKILL) is started again after a back-off (1 s doubling to
  30 s, back to 1 s once a child ran a minute); it takes the lease when the dead one's runs out.
- `stop` closes the pipe and waits ``stop_seconds`` for the child, then kills it.
- The child runs no migration and creates no token: the parent did both before handing it the settings.
  It touches nothing before it has them; a child whose stdin closes without them (the parent's start
  failed, or the parent died) exits at once, status 0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import click

from federation.cli.signals import stop_signals
from federation.database_urls import is_postgres_url
from federation.settings import Settings

log = logging.getLogger(__name__)

# The child's argv before ``controllers --wake-fd N`` (a benchmark prefixes its instrumentation here).
CHILD_COMMAND: list[str] = [sys.executable, "-m", "federation"]
RESTART_BACKOFF_INITIAL = 1.0
RESTART_BACKOFF_MAX = 30.0
STABLE_SECONDS = 60.0  # a child that ran this long resets the back-off
STOP_SECONDS = 60.0


def runs_apart(settings: Settings) -> bool:
    """Whether `serve` runs its controllers in a child process: on Postgres when the settings say so.
    SQLite lets one writer in at a time, so two processes on one file would only queue behind each other."""
    return settings.controllers.separate_process and is_postgres_url(settings.resolved_database_url())


@dataclass
class ControllerProcess:
    """The parent's handle on its controllers' child process."""

    settings: Settings
    stop_seconds: float = STOP_SECONDS
    backoff_initial: float = RESTART_BACKOFF_INITIAL
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _child: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _wake_fd: int | None = field(default=None, init=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False)
    _monitor: threading.Thread | None = field(default=None, init=False)
    _launched: tuple[subprocess.Popen[bytes], int] | None = field(default=None, init=False)  # no settings yet

    def launch(self) -> None:
        """Start the child now; it imports its modules and waits for the settings ``start`` gives it."""
        if self._launched is None and self._child is None:
            self._launched = self._start_child()

    def start(self) -> None:
        """Hand the launched child its settings (launching one first if none was), and watch it."""
        launched, self._launched = self._launched, None
        self._hand_over(*(launched or self._start_child()))
        self._monitor = threading.Thread(target=self._watch, name="controller-process", daemon=True)
        self._monitor.start()

    def wake(self, kind: str) -> None:
        """Tell the child that ``kind`` was written (``ApiContext.notify``); never blocks."""
        # Under the lock: a pipe closed by a restart or a stop meanwhile could see its descriptor's number
        # reused by another file (a database socket) before this write. Full pipe (the child is busy): the
        # wake is dropped, its tick finds the write. A line is shorter than PIPE_BUF: whole or not at all.
        with self._lock, contextlib.suppress(OSError):
            if self._wake_fd is not None:
                os.write(self._wake_fd, kind.encode() + b"\n")

    def stop(self) -> None:
        self._stopping.set()
        launched, self._launched = self._launched, None
        if launched is not None:  # never given its settings: it ends at the end of its stdin
            waiting, write_fd = launched
            os.close(write_fd)
            _close_stdin(waiting)
            _end(waiting, self.stop_seconds)
        with self._lock:
            child, self._child = self._child, None
            self._close_pipe()
        if child is not None:
            _end(child, self.stop_seconds)
        if self._monitor is not None:
            self._monitor.join(timeout=5)

    def _spawn(self) -> None:
        self._hand_over(*self._start_child())

    def _start_child(self) -> tuple[subprocess.Popen[bytes], int]:
        """A child process and the write end of its wake pipe; the child waits for its settings."""
        read_fd, write_fd = os.pipe()
        try:
            os.set_blocking(write_fd, False)
            command = [*CHILD_COMMAND, "controllers", "--wake-fd", str(read_fd)]
            return subprocess.Popen(command, stdin=subprocess.PIPE, pass_fds=(read_fd,)), write_fd
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)

    def _hand_over(self, child: subprocess.Popen[bytes], write_fd: int) -> None:
        """Give the child its settings and make it the one this handle wakes and watches."""
        assert child.stdin is not None
        with contextlib.suppress(OSError):  # it died at once: the monitor sees it exit and starts another
            child.stdin.write(self.settings.model_dump_json().encode())
        _close_stdin(child)
        with self._lock:
            stopping = self._stopping.is_set()  # a stop that came while this child was starting
            if not stopping:
                self._close_pipe()
                self._child, self._wake_fd = child, write_fd
        if stopping:
            os.close(write_fd)
            _end(child, self.stop_seconds)
            return
        log.info("controllers: started in process %d", child.pid)

    def _close_pipe(self) -> None:
        if self._wake_fd is not None:
            os.close(self._wake_fd)
            self._wake_fd = None

    def _watch(self) -> None:
        backoff = self.backoff_initial
        while not self._stopping.is_set():
            child = self._child
            if child is None:
                return
            started = time.monotonic()
            code = child.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= STABLE_SECONDS:
                backoff = self.backoff_initial
            log.error(
                "controllers: process %d exited with %s; starting another in %.0f s", child.pid, code, backoff
            )
            if self._stopping.wait(backoff):
                return
            backoff = min(backoff * 2, RESTART_BACKOFF_MAX)
            try:
                self._spawn()
            except OSError:  # no process could be started (out of memory, of pids): try again later
                log.exception("controllers: starting another process failed")


def _close_stdin(child: subprocess.Popen[bytes]) -> None:
    assert child.stdin is not None
    with contextlib.suppress(OSError):  # a child that died at once: nothing to flush to
        child.stdin.close()


def _end(child: subprocess.Popen[bytes], seconds: float) -> None:
    """Wait for a child whose pipe was closed; kill it when it takes longer than ``seconds``."""
    try:
        child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        log.error("controllers: process %d did not stop within %.0f s; killing it", child.pid, seconds)
        child.kill()
        child.wait()


# --- the child ------------------------------------------------------------------------------------------


@click.command("controllers", hidden=True)
@click.option("--wake-fd", type=int, required=True, help="The read end of the parent's wake pipe.")
def controllers_command(wake_fd: int) -> None:
    """Run the controllers of the `serve` that started this process (settings as JSON on stdin)."""
    # Until the settings come, the parent decides: a Ctrl-C at the terminal reaches this process too, and
    # the parent's stop closes the stdin this process waits on (a KeyboardInterrupt here would only print).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Not cli.server: the API (FastAPI, uvicorn, the routes) has no business in this process.
    from federation.cli import process_setup as setup

    given = sys.stdin.buffer.read()  # until the parent hands the settings over (``ControllerProcess.start``)
    if not given:
        return  # the parent stopped (or died) before it started the controllers: nothing to run
    settings = Settings.model_validate_json(given)
    setup.configure_logging(settings.log_level)
    setup.tune_malloc()
    if settings.controllers.process_niceness:
        os.nice(settings.controllers.process_niceness)  # the API's requests first, where cores are short
    stopped = threading.Event()
    with stop_signals(lambda _signum: stopped.set()):
        runner, dispose = setup.start_controllers_alone(settings)
        try:
            setup.tune_collector(settings)
            reader = threading.Thread(
                target=_follow_wakes, args=(wake_fd, runner.wake, stopped), name="wakes", daemon=True
            )
            reader.start()
            while not stopped.wait(0.5):  # timed: the main thread gets back to run a signal handler
                continue
            log.info("controllers: stopping")
        finally:
            try:
                runner.stop()
            finally:
                dispose()
    log.info("controllers: stopped")


def _follow_wakes(fd: int, wake: Callable[[str], None], stopped: threading.Event) -> None:
    """Wake the controllers for each kind the parent writes; end of file means the parent is gone."""
    pending = b""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            chunk = pipe.read(4096)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for kind in dict.fromkeys(lines):  # a burst of writes wakes each kind once
                if kind:
                    wake(kind.decode())
    stopped.set()
