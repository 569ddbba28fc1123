"""Blocking a foreground command (`up`, `agent`, `sim`) until Ctrl-C or SIGTERM, then returning normally
so the caller's cleanup runs."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def wait_for_stop() -> None:
    """Return once SIGINT or SIGTERM arrives; the previous handlers are restored afterwards."""
    stopped = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stopped.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        # A timed wait, so the main thread gets back to the interpreter to run the handler promptly.
        while not stopped.wait(0.5):
            continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
