"""What the benchmark's child processes (servers and members) share: free ports, CPU, RSS and child
processes read from ``/proc``, waiting for a condition, and the command that runs a function of this package
in a new interpreter."""

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


def _stat_fields(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` from its third field (state) on: the command name may hold spaces."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (``/proc/<pid>/stat`` utime and stime)."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_and_reaped_cpu_seconds(pid: int) -> tuple[float, float]:
    """A process's own user + system CPU, and that of its children that ended and were waited for
    (``cutime`` and ``cstime``: a restarted child's predecessors)."""
    fields = _stat_fields(pid)
    own = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return own, (int(fields[13]) + int(fields[14])) / CLOCK_TICKS


def parent_pid(pid: int) -> int | None:
    try:
        return int(_stat_fields(pid)[1])
    except (OSError, IndexError, ValueError):
        return None


def ended(pid: int) -> bool:
    """Gone, or a zombie (its parent, which may be an init that never reaps, has not waited for it)."""
    try:
        return _stat_fields(pid)[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def child_pids(pid: int) -> list[int]:
    """The live child processes of ``pid``: ``/proc/<pid>/task/*/children`` where the kernel has them
    (CONFIG_PROC_CHILDREN), else every process whose parent is ``pid`` (a scan of ``/proc``, a few ms)."""
    files = list(Path(f"/proc/{pid}/task").glob("*/children"))
    if files:
        found: list[int] = []
        for file in files:
            try:
                found += [int(child) for child in file.read_text().split()]
            except OSError:  # the thread ended meanwhile
                continue
        return sorted(set(found))
    if not Path(f"/proc/{pid}").exists():
        return []
    return sorted(
        int(entry.name)
        for entry in os.scandir("/proc")
        if entry.name.isdigit() and parent_pid(int(entry.name)) == pid
    )


def rss_mb(pid: int) -> float:
    """VmRSS of a process, MB (0 for a zombie, which has no memory left)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


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
