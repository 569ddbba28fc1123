"""The controller runtime: an injected clock, the reconciler contract, and the runner that times them.

Invariants:
- Reconcilers run only while this process holds the leader lease, so any number of `serve` replicas can
  share one database; a replica that loses the lease stops reconciling at its next tick.
- Fencing: the reconcilers' unit of work is guarded by ``leader_fence`` (``UnitOfWork.guarded``), so a
  transaction that writes commits only while this process still holds the lease, checked inside that
  transaction (see ``store.leases``). A pass whose fence fails stops at once and the process stops being
  leader; it never writes on a lease another replica may take over. (ADR: ``adr-leadership.md``.)
- The lease job also renews the claims of the passes running now (``claims.renew``), and a process that
  becomes leader drops the claims of its predecessor (``claims.void_others``): a killed leader's items are
  picked up within one lease, not when its claims run out.
- Each reconciler is one APScheduler job with `max_instances=1` and `coalesce=True`: it never runs
  concurrently with itself, and missed ticks collapse into one.
- A write (from the API, or from another reconciler) wakes the reconcilers that watch its kind at once,
  instead of waiting for their interval; the interval is the level-triggered safety net.
- A reconciler that raises is logged and retried at its next tick; it never stops the runner.
- A reconciler that learns of changes outside the database (member watches) has ``wake_with``: it is
  handed ``wake`` and wakes whoever watches the kind it names. One with ``close`` is closed at ``stop``.
- An interval tick of a reconciler that has a probe (``pending``) runs its pass only when the probe says
  there is something to do (``idle_gate``): the probes of all reconcilers are one SELECT per tick, so an
  idle federation costs a query a second, not a dozen transactions. Woken passes never ask.
- Memory a large pass freed goes back to the OS: after a pass that handled ``trim_after_items`` items or
  more, the lease job (every lease/3 s, so at most that often) asks glibc to release its free pages
  (``malloc_trim(0)``; a no-op where there is no glibc). glibc keeps what a burst freed in the arenas of
  the threads that freed it; at 200 bindings that was ~9 of the server's ~40 MB growth. (pymalloc's
  arenas, the rest, go back only when empty: what bounds them is passes that read a page, not all rows.)
"""

from __future__ import annotations

import ctypes
import functools
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, cast

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy.orm import Session

from federation.controllers.idle_gate import IdleGate, probes_of
from federation.store import claims
from federation.store.db import Guard, UnitOfWork
from federation.store.leases import LeaseLost, LeaseRepository

log = logging.getLogger(__name__)
# APScheduler logs every job run at INFO and every coalesced wake-up as a warning: with a dozen jobs ticking
# each second that is most of a log. Job failures are ours to log (``_run``), and it still logs errors.
logging.getLogger("apscheduler.executors").setLevel(logging.WARNING)
logging.getLogger("apscheduler.scheduler").setLevel(logging.ERROR)


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class FakeClock:
    """A clock tests move by hand (thresholds and timeouts without sleeping)."""

    current: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> datetime:
        self.current += timedelta(seconds=seconds)
        return self.current


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one pass did: how many items it handled, and which kinds it wrote (to wake their watchers)."""

    processed: int = 0
    wrote: frozenset[str] = frozenset()

    @staticmethod
    def of(processed: int, *kinds: str) -> Outcome:
        return Outcome(processed, frozenset(kinds) if processed else frozenset())


class Reconciler(Protocol):
    name: str
    interval_seconds: float
    # API kinds whose writes should wake this reconciler early.
    watches: frozenset[str]

    def reconcile(self) -> Outcome: ...


@functools.cache
def _glibc(name: str) -> Any | None:
    """A function of glibc by name, or None (musl, macOS, Windows: nothing to do). Looked up among the
    symbols the process has loaded (``dlopen(NULL)``; the interpreter links the C library): where
    ``ctypes.util.find_library`` runs ``ldconfig -p`` in a subprocess at every start."""
    try:
        return getattr(ctypes.CDLL(None), name, None)
    except (OSError, TypeError):  # TypeError: Windows, where a library needs a name
        return None


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None."""
    trim = _glibc("malloc_trim")
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return cast("Callable[[int], int] | None", trim)


# glibc's ``mallopt`` parameters (malloc.h): the number of arenas, the size served by a mapping of its own.
_M_ARENA_MAX = -8
_M_MMAP_THRESHOLD = -3


def _mallopt(parameter: int, value: int) -> bool:
    mallopt = _glibc("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(parameter, value))


def limit_malloc_arenas(count: int) -> bool:
    """Cap glibc's malloc arenas (``mallopt(M_ARENA_MAX)``, what ``MALLOC_ARENA_MAX`` sets); False where there
    is no glibc or the cap was refused. Call before threads start: glibc gives each thread that contends for
    an arena one of its own (up to 8 per core), and memory a pass freed stays in that thread's arena."""
    return _mallopt(_M_ARENA_MAX, count)


def fix_mmap_threshold(size: int) -> bool:
    """Serve every block of ``size`` bytes or more by a mapping of its own, unmapped when freed
    (``mallopt(M_MMAP_THRESHOLD)``, what ``MALLOC_MMAP_THRESHOLD_`` sets); False where there is no glibc or
    the size was refused. glibc's threshold starts at 128 KiB but rises to the largest mapped block freed
    (up to 32 MiB): after the first large one, a member's LIST body, a full read's result or a growing
    dict's table is carved from the heap, and the heap keeps the holes they leave between the blocks that
    stay. A fixed threshold also keeps the heap's trim threshold at its default."""
    return _mallopt(_M_MMAP_THRESHOLD, size)


def release_free_memory() -> bool:
    """Give the pages glibc holds free back to the OS (``malloc_trim(0)``); False where there is no glibc."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def default_identity() -> str:
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


def leader_fence(identity: str, clock: Clock) -> Guard:
    """The guard of every controller transaction that writes: ``identity`` must hold the leader lease."""

    def check(session: Session) -> None:
        LeaseRepository(session).assert_leader(identity, clock.now())

    return check


class ControllerRunner:
    """Runs reconcilers on their intervals under the leader lease; `wake(kind)` runs watchers now."""

    def __init__(
        self,
        uow: UnitOfWork,
        reconcilers: Sequence[Reconciler],
        *,
        lease_seconds: float,
        identity: str | None = None,
        clock: Clock | None = None,
        claim_seconds: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        trim_after_items: int = 100,
        release_memory: Callable[[], bool] = release_free_memory,
    ) -> None:
        self._uow = uow
        self._reconcilers = list(reconcilers)
        self._lease_seconds = lease_seconds
        self._claim_seconds = claim_seconds if claim_seconds is not None else lease_seconds
        self.identity = identity or default_identity()
        self._clock = clock or SystemClock()
        self._leader = threading.Event()
        self._trim_after_items = trim_after_items
        self._release_memory = release_memory
        self._large_pass = (
            threading.Event()
        )  # a pass handled ``trim_after_items`` or more since the last trim
        workers = max(2, len(self._reconcilers) + 1)
        self._stop_hooks: list[Callable[[], None]] = []
        for reconciler in self._reconcilers:
            wake_with = getattr(reconciler, "wake_with", None)
            if wake_with is not None:
                wake_with(self.wake)
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(workers)}, timezone=UTC
        )
        # Ticks of one interval fire together; a verdict older than half the shortest interval is not shared.
        shortest = min((r.interval_seconds for r in self._reconcilers), default=1.0)
        self.gate = IdleGate(
            uow, probes_of(self._reconcilers), fresh_seconds=min(0.5, shortest / 2), monotonic=monotonic
        )

    @property
    def is_leader(self) -> bool:
        return self._leader.is_set()

    def start(self) -> None:
        lease_every = max(self._lease_seconds / 3, 0.2)
        self._scheduler.add_job(
            self._renew_claims,
            "interval",
            seconds=max(self._claim_seconds / 3, 0.2),
            id="claim-renewal",
            max_instances=1,
            coalesce=True,
        )
        self._scheduler.add_job(
            self._hold_lease,
            "interval",
            seconds=lease_every,
            id="leader-lease",
            next_run_time=datetime.now(UTC),
            max_instances=1,
            coalesce=True,
        )
        for reconciler in self._reconcilers:
            self._scheduler.add_job(
                self._run,
                "interval",
                args=[reconciler],
                seconds=reconciler.interval_seconds,
                id=reconciler.name,
                max_instances=1,
                coalesce=True,
            )
        self._scheduler.start()

    def on_stop(self, hook: Callable[[], None]) -> None:
        """Run `hook` after the reconcilers have stopped (close member clients and the like)."""
        self._stop_hooks.append(hook)

    def stop(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)
        for reconciler in self._reconcilers:
            close = getattr(reconciler, "close", None)
            if close is not None:
                close()
        while self._stop_hooks:
            self._stop_hooks.pop()()
        if self.is_leader:
            with self._uow() as session:
                LeaseRepository(session).release(self.identity, self._clock.now())
            self._leader.clear()

    def tick(self, name: str) -> None:
        """One interval tick of the reconciler ``name`` in the calling thread: what its job runs."""
        self._run(next(r for r in self._reconcilers if r.name == name))

    def hold_lease(self) -> bool:
        """Take or renew the leader lease now (what the lease job does); whether this process leads."""
        self._hold_lease()
        return self.is_leader

    def wake(self, kind: str) -> None:
        """Run every reconciler that watches `kind` as soon as a worker is free."""
        self._wake_names(r.name for r in self._reconcilers if kind in r.watches)

    def _wake_names(self, names: Iterable[str]) -> None:
        if not self._scheduler.running:
            return
        now = datetime.now(UTC)
        for name in names:
            self.gate.wake(name)
            job = self._scheduler.get_job(name)
            if job is not None:
                job.modify(next_run_time=now)

    def _hold_lease(self) -> None:
        # The lease row alone in its transaction: the controllers' fence share-locks it at the end of
        # theirs, so a transaction that also locked their rows (claims) would deadlock with them.
        try:
            with self._uow() as session:
                held = LeaseRepository(session).try_acquire(
                    self.identity, self._clock.now(), int(self._lease_seconds)
                )
        except Exception:
            log.exception("leader lease: renewal failed")
            held = False
        if held and not self.is_leader:
            self._take_over_claims()
            log.info("leader lease acquired by %s", self.identity)
            self._leader.set()
            self._wake_names(r.name for r in self._reconcilers)
        elif not held and self.is_leader:
            log.warning("leader lease lost by %s", self.identity)
            self._leader.clear()
        self._trim_after_large_passes()  # after the lease: never delays its renewal

    def _trim_after_large_passes(self) -> None:
        if not self._large_pass.is_set():
            return
        self._large_pass.clear()
        try:
            self._release_memory()
        except Exception:  # never worth failing the lease for
            log.exception("releasing free memory failed")

    def _take_over_claims(self) -> None:
        try:
            with self._uow() as session:
                voided = claims.void_others(session, self.identity)
        except Exception:  # they run out by themselves within the claim lease
            log.exception("leader %s: dropping the predecessor's claims failed", self.identity)
            return
        if voided:
            log.info("leader %s took over %d claims of its predecessor", self.identity, voided)

    def _renew_claims(self) -> None:
        """Its own job (not the lease's): it may wait on rows a running pass has locked, and the lease
        must be renewed on time whatever it waits for."""
        if not self.is_leader:
            return
        try:
            with self._uow() as session:
                claims.renew(session, self.identity, self._clock.now(), self._claim_seconds)
        except Exception:
            log.exception("claim renewal failed; the claims run out unless the next renewal succeeds")

    def _run(self, reconciler: Reconciler) -> None:
        if not self.is_leader or not self.gate.begin(reconciler.name):
            return
        busy = True  # a pass that raised runs again at its next tick, whatever its probe says
        try:
            outcome = reconciler.reconcile()
            busy = outcome.processed > 0
        except LeaseLost as lost:
            if self._leader.is_set():
                log.warning("controller %s stopped: %s; no longer leader", reconciler.name, lost)
                self._leader.clear()
            return
        except Exception:
            log.exception("controller %s failed; retrying at its next tick", reconciler.name)
            return
        finally:
            self.gate.end(reconciler.name, busy=busy)
            claims.forget_held(self.identity)
        if outcome.processed >= self._trim_after_items:
            self._large_pass.set()
        for kind in outcome.wrote:
            self.wake(kind)
