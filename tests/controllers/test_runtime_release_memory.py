"""After a large pass the runner gives glibc's free pages back to the OS (issue 12, memory): a burst of
passes leaves its freed memory in the arenas of the threads that freed it, counted in the server's RSS
until something releases it. The lease job does, once after any number of large passes, never after
small ones."""

from __future__ import annotations

import ctypes
import ctypes.util
from dataclasses import dataclass

from bench.pipeline_bench.heap import mallinfo  # glibc's own account (mallinfo2), in MB
from federation.controllers.runtime import (
    ControllerRunner,
    FakeClock,
    Outcome,
    fix_mmap_threshold,
    limit_malloc_arenas,
    release_free_memory,
)
from federation.store.db import UnitOfWork
from tests.controllers.test_change_feed_and_idle_gate import uow

__all__ = ["uow"]  # the fixture, re-exported for pytest


@dataclass
class Batches:
    """A reconciler whose passes handle the sizes it is given, in order."""

    sizes: list[int]
    name: str = "batches"
    interval_seconds: float = 1.0
    watches: frozenset[str] = frozenset()

    def reconcile(self) -> Outcome:
        return Outcome(self.sizes.pop(0))


def test_free_memory_is_released_once_after_large_passes_only(uow: UnitOfWork) -> None:
    releases: list[str] = []
    runner = ControllerRunner(
        uow,
        [Batches([3, 99, 100, 250, 0])],
        lease_seconds=3600,
        clock=FakeClock(),
        trim_after_items=100,
        release_memory=lambda: releases.append("trim") is None,
    )
    assert runner.hold_lease()
    runner.tick("batches")  # 3 items
    runner.tick("batches")  # 99 items
    runner.hold_lease()
    assert releases == []  # small passes: nothing to give back
    runner.tick("batches")  # 100 items
    runner.tick("batches")  # 250 items
    runner.hold_lease()
    assert releases == ["trim"]  # once for both
    runner.tick("batches")  # nothing
    runner.hold_lease()
    assert releases == ["trim"]


def test_release_free_memory_is_safe_to_call_anywhere() -> None:
    assert release_free_memory() in (True, False)  # False where there is no glibc


def test_capping_malloc_arenas_is_safe_to_call_anywhere() -> None:
    # glibc accepts the cap (mallopt returns 1); elsewhere there is nothing to cap.
    assert limit_malloc_arenas(2) is _has_mallopt()


def test_a_fixed_mmap_threshold_maps_large_blocks_even_after_a_larger_one_was_freed() -> None:
    mb = 2**20
    if not mallinfo():  # no glibc (or one older than mallinfo2): nothing to fix, nothing to read
        assert fix_mmap_threshold(128 * 1024) is _has_mallopt()
        return

    def mapped_while_held(size: int) -> float:
        before = mallinfo()["mmapped"]
        block = bytearray(size)  # one malloc of its size: a mapping of its own, or a piece of the heap
        during = mallinfo()["mmapped"]
        del block
        return (during - before) * mb

    assert fix_mmap_threshold(128 * 1024)
    freed = bytearray(16 * mb)  # freeing a mapped block this large raises glibc's own threshold to its size
    del freed
    size = int(mallinfo()["free"] * mb) + mb  # more than the heap holds free: it must grow, or map the block
    assert mapped_while_held(size) >= size  # mapped: the threshold stayed where it was set


def _has_mallopt() -> bool:
    library = ctypes.util.find_library("c")
    return library is not None and hasattr(ctypes.CDLL(library), "mallopt")
