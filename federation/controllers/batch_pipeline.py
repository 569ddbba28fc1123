"""The scheduler's pass as a pipeline of batches: the next batch claimed ahead on a thread of its own
(``NextBatch``) and each batch's write behind on worker threads (``BatchWrites``), while the pass decides the
current batch on its own thread. Work sync's pass uses the same two around its member I/O.

Why: a batch is ~40 ms of deciding against a claim of a few round trips and a write of ~10; in sequence the
pass waited on the database most of the time, while on Postgres the waits overlap the engine's work. On
SQLite (one writer at a time) both run on the caller's thread, in order.

Invariants:
- At most ``depth`` writes are in flight, each on its own connection; they may commit in any order (the
  pass's batches are disjoint: each row is claimed once). An exception of a write (a database outage
  included) is raised in the pass by a later ``submit``, ``wait`` or the end of the ``with`` block, once
  every write in flight has ended.
- A claim started ahead is always taken by the pass unless the pass raises; then its rows stay claimed until
  their lease runs out, as any failed pass leaves its batch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")
B = TypeVar("B")


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """``items`` in consecutive lists of ``size`` (the last may be shorter): a pass's batches."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class BatchWrites:
    """The batch writes of one pass, each on a worker thread while the pass decides the next batch
    (``overlap``), or at once on the caller's thread (no overlap, or the pass's ``last`` batch).

    At most ``depth`` writes are in flight, each on its own connection: a write is mostly round trips to
    the database, and with one in flight the pass waited for them (a batch took ~40 ms to decide and ~100 ms
    to write). Their bindings are disjoint (each claimed by this pass), so they may commit in any order.
    ``submit`` waits for the oldest when ``depth`` are in flight; an exception of a write (a database outage
    included) is raised in the pass, by a later ``submit``, ``wait`` or the end of the ``with`` block. The
    worker threads start with the first write given to them."""

    def __init__(self, *, overlap: bool, depth: int = 1, thread_name: str = "scheduler-write") -> None:
        self._overlap = overlap
        self._depth = max(1, depth)
        self._thread_name = thread_name
        self._pool: ThreadPoolExecutor | None = None
        self._futures: deque[Future[int]] = deque()
        self.written = 0

    def __enter__(self) -> BatchWrites:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def submit(
        self, write: Callable[[Sequence[T]], int], pending: Sequence[T], *, last: bool = False
    ) -> None:
        while len(self._futures) >= self._depth:
            self._take_oldest()
        if last or not self._overlap:
            self.written += write(pending)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._depth, thread_name_prefix=self._thread_name)
        self._futures.append(self._pool.submit(write, pending))

    def in_flight(self) -> bool:
        return bool(self._futures)

    def wait(self) -> None:
        """Wait for every write in flight (the first exception is raised once all have ended)."""
        failure: BaseException | None = None
        while self._futures:
            try:
                self._take_oldest()
            except BaseException as exc:  # the others still finish before the pass goes on
                failure = failure or exc
        if failure is not None:
            raise failure

    def _take_oldest(self) -> None:
        self.written += self._futures.popleft().result()


class NextBatch(Generic[B]):
    """The claim of the pass's next batch: on a thread of its own (``prefetch``), started while the pass
    decides the current batch, so the claim's round trips overlap that work; else taken at once on the
    caller's thread. ``start`` begins the next claim, ``take`` waits for it (or claims now when none was
    started). A claim started is always taken by the pass, but when it raises: then its rows stay
    claimed until their lease runs out, as any pass that fails leaves its batch."""

    def __init__(
        self, fetch: Callable[[], B], *, prefetch: bool, thread_name: str = "scheduler-claim"
    ) -> None:
        self._fetch = fetch
        self._prefetch = prefetch
        self._thread_name = thread_name
        self._pool: ThreadPoolExecutor | None = None
        self._next: Future[B] | None = None

    def __enter__(self) -> NextBatch[B]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def start(self) -> None:
        if not self._prefetch or self._next is not None:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=self._thread_name)
        self._next = self._pool.submit(self._fetch)

    def take(self) -> B:
        started, self._next = self._next, None
        return started.result() if started is not None else self._fetch()
