"""What the benchmark's child processes (servers and members) share: free ports, CPU read from ``/proc``,
waiting for a condition, and the command that runs a function of this package in a new interpreter."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

# bench/: a child process puts it on sys.path to import this package.
BENCH_DIR = str(Path(__file__).resolve().parent.parent)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (``/proc/<pid>/stat`` utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> float:
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > timeout:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
    return time.perf_counter() - start


def entry_command(module: str, function: str) -> list[str]:
    """``python -c`` that calls ``pipeline_bench.<module>.<function>()``; the caller appends its argv."""
    code = (
        f"import sys; sys.path.insert(0, {BENCH_DIR!r}); "
        f"from pipeline_bench.{module} import {function}; {function}()"
    )
    return [sys.executable, "-c", code]
