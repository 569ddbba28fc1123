"""SIGINT and SIGTERM as a request to stop, not an end: the foreground commands (`serve`, `up`, `agent`,
`sim`) return normally on them, so their cleanup runs (controllers stopped, the leader lease released,
clients closed) and the exit code is 0.

`serve` runs uvicorn in the main thread. uvicorn installs its own handlers while it serves and, after its
graceful shutdown, restores the handlers it found and raises each signal it caught again (so an embedder
hears it): with the default handlers that re-raise kills the process before anything after
``uvicorn.Server.run`` runs. Installed around it, ``stop_signals`` is what hears the re-raise.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_signals(on_stop: Callable[[int], None]) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM call ``on_stop(signum)`` (in the main thread, between two bytecodes
    of whatever it runs) instead of ending the process; the previous handlers are restored afterwards."""

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        on_stop(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def wait_for_stop() -> None:
    """Return once SIGINT or SIGTERM arrives; the previous handlers are restored afterwards."""
    stopped = threading.Event()
    with stop_signals(lambda _signum: stopped.set()):
        # A timed wait, so the main thread gets back to the interpreter to run the handler promptly.
        while not stopped.wait(0.5):
            continue
