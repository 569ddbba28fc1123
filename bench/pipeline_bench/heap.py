"""Heap inspection of a ``serve`` process, on request (``--heap-dir``; measurement only, off by default).

Inside the server (``serve_heap_requests``, started by ``instrumentation`` when ``PIPELINE_BENCH_HEAP_DIR``
is set): ``tracemalloc`` traces from the start with ``PIPELINE_BENCH_HEAP_FRAMES`` frames, and a thread
answers request files dropped in that directory. ``<label>.request`` asks for a snapshot: it writes
``<label>.tracemalloc`` (``Snapshot.dump``) and ``<label>.json`` (VmRSS, tracemalloc's traced and peak
bytes, the 60 most numerous object types from ``gc.get_objects()``); ``<label>.trim.request`` also calls
glibc's ``malloc_trim(0)`` and records VmRSS before and after it: what the allocator held without Python
using it. The benchmark (``Replica.heap``) writes the request and waits for the answer.

Only the standard library: this module is imported before ``federation`` runs.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import json
import os
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

HEAP_DIR_ENV = "PIPELINE_BENCH_HEAP_DIR"
HEAP_FRAMES_ENV = "PIPELINE_BENCH_HEAP_FRAMES"
HEAP_PEAKS_ENV = "PIPELINE_BENCH_HEAP_PEAKS"  # under tracemalloc: snapshots at new peaks (peak-N.tracemalloc)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def mallinfo() -> dict[str, float]:
    """glibc's view (MB): ``arena`` bytes obtained by sbrk/arenas, ``in_use``, ``free`` (held, unused),
    ``mmapped`` (large blocks), summed over all arenas (``mallinfo2``, glibc >= 2.33)."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    call = getattr(libc, "mallinfo2", None)
    if call is None:
        return {}
    call.restype = _Mallinfo2
    info = call()
    mb = 2**20
    return {
        "arena": info.arena / mb,
        "in_use": info.uordblks / mb,
        "free": info.fordblks / mb,
        "mmapped": info.hblkhd / mb,
        "top_releasable": info.keepcost / mb,
    }


def pymalloc_stats() -> dict[str, float]:
    """pymalloc's arenas (``sys._debugmallocstats``, captured from fd 2): arenas allocated now (MB), bytes
    in used blocks, bytes free in pools and arenas."""
    import re
    import sys
    import tempfile

    with tempfile.TemporaryFile() as scratch:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(scratch.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        scratch.seek(0)
        text = scratch.read().decode(errors="replace")
    found: dict[str, float] = {}
    for key, pattern in (
        ("arenas_allocated_current", r"# arenas allocated current\s*=\s*([\d,]+)"),
        ("arenas_highwater", r"# arenas highwater mark\s*=\s*([\d,]+)"),
        ("allocated_blocks_mb", r"bytes in allocated blocks\s*=\s*([\d,]+)"),
        ("available_blocks_mb", r"bytes in available blocks\s*=\s*([\d,]+)"),
        ("unused_pools_mb", r"unused pools \* \d+ bytes\s*=\s*([\d,]+)"),
        ("arenas_mb", r"bytes/arena\s*=\s*([\d,]+)"),
    ):
        match = re.search(pattern, text)
        if match:
            value = float(match.group(1).replace(",", ""))
            found[key] = value / 2**20 if key.endswith("_mb") else value
    return found


class PassBook:
    """Per controller: the VmRSS growth seen across its passes (summed; passes of other controllers and
    API requests running meanwhile are counted too) and, under tracemalloc, the largest rise of the
    traced peak above the traced size at the pass's start (the pass's transient high-water mark)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rss_growth_mb: dict[str, float] = {}
        self.peak_rise_mb: dict[str, float] = {}

    def start(self) -> tuple[float, int]:
        current = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
        return rss_mb(), current

    def end(self, name: str, started: tuple[float, int]) -> None:
        grown = rss_mb() - started[0]
        rise = 0.0
        if tracemalloc.is_tracing():
            rise = (tracemalloc.get_traced_memory()[1] - started[1]) / 2**20
        with self._lock:
            if grown > 0:
                self.rss_growth_mb[name] = self.rss_growth_mb.get(name, 0.0) + grown
            self.peak_rise_mb[name] = max(self.peak_rise_mb.get(name, 0.0), rise)

    def report(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {
                "rss_growth_mb": {
                    k: round(v, 1) for k, v in sorted(self.rss_growth_mb.items(), key=lambda kv: -kv[1])
                },
                "traced_peak_rise_mb": {
                    k: round(v, 1) for k, v in sorted(self.peak_rise_mb.items(), key=lambda kv: -kv[1])
                },
            }


PASSES = PassBook()
ENABLED = False


def malloc_trim() -> bool:
    name = ctypes.util.find_library("c")
    if not name:
        return False
    libc = ctypes.CDLL(name)
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


def type_counts(top: int = 60) -> dict[str, int]:
    counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    return dict(counts.most_common(top))


def answer(directory: Path, request: Path) -> None:
    label = request.name.removesuffix(".request")
    trim = label.endswith(".trim")
    label = label.removesuffix(".trim")
    gc.collect()
    report: dict[str, Any] = {"label": label, "rss_mb": rss_mb(), "malloc": mallinfo()}
    report["pymalloc"] = pymalloc_stats()
    if trim:  # before the snapshot, whose own allocations would be trimmed too
        report["trimmed"] = malloc_trim()
        report["rss_mb_after_trim"] = rss_mb()
        report["malloc_after_trim"] = mallinfo()
    if tracemalloc.is_tracing():
        current, peak = tracemalloc.get_traced_memory()
        report["traced_mb"], report["traced_peak_mb"] = current / 2**20, peak / 2**20
        snapshot = tracemalloc.take_snapshot()
        snapshot.dump(str(directory / f"{label}.tracemalloc"))
        del snapshot
        gc.collect()
        tracemalloc.reset_peak()  # the snapshot's own copy is not the server's peak
    report["types"] = type_counts()
    report["gc_objects"] = len(gc.get_objects())
    report["passes"] = PASSES.report()
    peaks = int(os.environ.get(HEAP_PEAKS_ENV, "0") or 0)
    if label == "before" and peaks > 0 and tracemalloc.is_tracing():  # the pipeline starts now
        threading.Thread(target=watch_peaks, args=(directory, peaks), name="bench-peaks", daemon=True).start()
    scratch = directory / f"{label}.json.tmp"
    scratch.write_text(json.dumps(report))
    os.replace(scratch, directory / f"{label}.json")
    request.unlink()


def serve_heap_requests(directory: Path) -> None:
    while True:
        for request in sorted(directory.glob("*.request")):
            answer(directory, request)
        time.sleep(0.2)


def watch_peaks(directory: Path, most: int, step_mb: float = 2.0, every: float = 0.02) -> None:
    """Snapshot the traced heap when it reaches a new high, ``step_mb`` above the last one, ``most`` times:
    what holds memory at the peaks (the transient high-water marks the allocator keeps afterwards)."""
    best = tracemalloc.get_traced_memory()[0] + step_mb * 2**20
    for index in range(most):
        while tracemalloc.get_traced_memory()[0] < best:
            time.sleep(every)
        snapshot = tracemalloc.take_snapshot()
        current = tracemalloc.get_traced_memory()[0]
        snapshot.dump(str(directory / f"peak-{index}.tracemalloc"))
        (directory / f"peak-{index}.json").write_text(json.dumps({"traced_mb": current / 2**20}))
        del snapshot
        best = max(best, current) + step_mb * 2**20


def install_from_env() -> None:
    where = os.environ.get(HEAP_DIR_ENV)
    if not where:
        return
    global ENABLED
    ENABLED = True
    frames = int(os.environ.get(HEAP_FRAMES_ENV, "0") or 0)
    if frames > 0:
        tracemalloc.start(frames)
    directory = Path(where)
    directory.mkdir(parents=True, exist_ok=True)
    threading.Thread(target=serve_heap_requests, args=(directory,), name="bench-heap", daemon=True).start()


def request(directory: Path, label: str, trim: bool = False, timeout: float = 300.0) -> dict[str, Any]:
    """Ask the server watching ``directory`` for a heap report; its answer."""
    directory.mkdir(parents=True, exist_ok=True)
    answer_path = directory / f"{label}.json"
    answer_path.unlink(missing_ok=True)
    (directory / (f"{label}.trim.request" if trim else f"{label}.request")).write_text("")
    deadline = time.monotonic() + timeout
    while not answer_path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no heap report {label} within {timeout} s")
        time.sleep(0.2)
    return dict(json.loads(answer_path.read_text()))
