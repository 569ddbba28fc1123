"""One reader of the change log per API process, fanning its events out to the open watches.

kube-apiserver's watch cache in small: instead of every watch polling the database, one task polls it
(every ``api.watch_poll_seconds``), turns what it read into final events in revision order
(``changefeed.Resolver``) and hands each to the subscriptions whose filter takes it.

Invariants:
- ``resolved`` only grows; every event up to it has been offered to every subscription open at the
  time. A subscription made now therefore gets exactly the events after ``resolved`` (its ``position``);
  what came before, the watch reads from the log itself. Lists report ``resolved`` as their
  resourceVersion, so list-then-watch misses nothing (an event the list already showed may come again).
- The poll runs in a worker thread in a session of its own: no database connection is held between
  polls, and the event loop never blocks on the database. One poll at a time (``_stepping``).
- Idle costs nearly nothing: with no watch open the hub polls every ``idle_poll_seconds`` (5 s), not
  every ``poll_seconds``; a list (``current``) first reads the log up to now when the last poll is older
  than ``poll_seconds``, so what it reports is as fresh as when watches keep the hub polling, and a new
  watch wakes the hub at once.
- State is touched only on the event loop (the poll's result is applied there); threads read
  ``resolved``, a plain int.
- When the server stops (``stopping()``), every subscription is closed and the task ends, so uvicorn's
  graceful shutdown is not held up by open watches. A subscription that falls ``capacity`` events behind
  is closed too: its client watches again from the last revision it got (client-go and kubectl do).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool

from federation.store import changefeed
from federation.store.changefeed import ChangeEntry, Poll, Resolver
from federation.store.db import UnitOfWork

log = logging.getLogger(__name__)

# Log rows read per poll; a backlog is drained by polling again at once.
POLL_BATCH = 500
# Events a subscription may hold unread before it is closed.
CAPACITY = 10_000
# How often the hub polls while no watch is open: only to keep the log it reads on a list's demand short.
IDLE_POLL_SECONDS = 5.0

Decide = Callable[[ChangeEntry], str | None]  # the event type to send for an entry, or None to skip it


@dataclass(eq=False)
class Subscription:
    """The events after ``position`` that ``decide`` takes, as (type, entry); ``None`` when closed."""

    decide: Decide
    position: int
    capacity: int = CAPACITY
    queue: asyncio.Queue[tuple[str, ChangeEntry] | None] = field(default_factory=asyncio.Queue)
    closed: bool = False
    overflowed: bool = False

    def offer(self, entry: ChangeEntry) -> None:
        if self.closed:
            return
        kind = self.decide(entry)
        if kind is None:
            return
        if self.queue.qsize() >= self.capacity:
            self.overflowed = True
            self.close()
            return
        self.queue.put_nowait((kind, entry))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


class ChangeHub:
    def __init__(
        self,
        uow: UnitOfWork,
        poll_seconds: float,
        stopping: Callable[[], bool],
        *,
        batch: int = POLL_BATCH,
        idle_poll_seconds: float = IDLE_POLL_SECONDS,
    ) -> None:
        self._uow = uow
        self._poll_seconds = poll_seconds
        self._idle_poll_seconds = max(idle_poll_seconds, poll_seconds)
        self._stopping = stopping
        self._batch = batch
        self._subscriptions: set[Subscription] = set()
        self._resolver: Resolver | None = None
        self._starting: asyncio.Lock | None = None
        self._stepping: asyncio.Lock | None = None
        self._watched: asyncio.Event | None = None  # set by a new subscription: the idle pause ends
        self._last_poll = 0.0  # the loop's clock at the end of the last poll
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.polls = 0  # polls made, for tests and for a reader of the hub's cost

    @property
    def resolved(self) -> int:
        assert self._resolver is not None, "start() the hub first"
        return self._resolver.resolved

    @property
    def subscribers(self) -> int:
        return len(self._subscriptions)

    @property
    def stopped(self) -> bool:
        return self._stopping()

    async def start(self) -> None:
        """Find where the log is complete and start polling (once; concurrent callers wait for it)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or the app is served on another loop than before
            self._loop, self._starting, self._resolver, self._subscriptions = (
                loop,
                asyncio.Lock(),
                None,
                set(),
            )
            self._stepping, self._watched = asyncio.Lock(), asyncio.Event()
        assert self._starting is not None
        async with self._starting:
            if self._resolver is None:
                self._resolver = Resolver(await run_in_threadpool(self._start_position))
                self._last_poll = loop.time()
                self._task = asyncio.create_task(self._run(), name="watch-change-hub")

    async def current(self) -> int:
        """``resolved`` for a list to report (after ``start``): with no watch open the hub polls seldom, so
        the log is read up to now first when the last poll is older than ``poll_seconds`` (concurrent lists
        share that poll)."""
        assert self._loop is not None
        if self._subscriptions:
            return self.resolved  # the watches keep the hub polling every poll_seconds
        full = await self.step(older_than=self._poll_seconds)
        while full and not self._subscriptions:  # a full batch: more of the log is waiting
            full = await self.step()
        return self.resolved

    def _start_position(self) -> int:
        with self._uow() as session:
            return changefeed.start_position(session)

    def subscribe(self, decide: Decide, capacity: int = CAPACITY) -> Subscription:
        subscription = Subscription(decide, self.resolved, capacity)
        if self.stopped:
            subscription.close()
        else:
            self._subscriptions.add(subscription)
            if self._watched is not None:
                self._watched.set()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)
        subscription.close()

    async def _run(self) -> None:
        failing = False
        while not self.stopped:
            try:
                full = await self.step()
            except SQLAlchemyError as exc:  # a database outage: keep the watches, try again next tick
                if not failing:  # one line per outage, no traceback (the API's outage log has the story)
                    log.warning("reading the change log failed, retrying: %s", str(exc).splitlines()[0])
                failing, full = True, False
            except Exception:  # a bug: say it, but keep the watches served
                log.exception("reading the change log failed")
                full = False
            else:
                if failing:
                    log.info("reading the change log works again")
                failing = False
            if not full:
                await self._pause()
        for subscription in list(self._subscriptions):
            self.unsubscribe(subscription)

    async def _pause(self) -> None:
        """Until the next poll: ``poll_seconds`` while watches are open, else ``idle_poll_seconds`` or until
        a watch subscribes."""
        assert self._watched is not None
        if self._subscriptions:
            await asyncio.sleep(self._poll_seconds)
            return
        self._watched.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._watched.wait(), self._idle_poll_seconds)

    async def step(self, older_than: float | None = None) -> bool:
        """One poll, its final events offered to the subscriptions; True when the batch was full.
        ``older_than``: poll only if the last poll ended longer ago than that (else False)."""
        assert self._resolver is not None and self._stepping is not None and self._loop is not None
        async with self._stepping:
            if older_than is not None and self._loop.time() - self._last_poll <= older_than:
                return False
            with_objects = bool(self._subscriptions)
            polled = await run_in_threadpool(self._poll, self._resolver.resolved, with_objects)
            self._last_poll = self._loop.time()
            self.polls += 1
            if not with_objects and self._subscriptions and polled.entries:
                return True  # a watch came while reading rows without their objects: read them again
            for entry in self._resolver.advance(polled):
                for subscription in list(self._subscriptions):
                    subscription.offer(entry)
                    if subscription.closed:
                        self._subscriptions.discard(subscription)
            return len(polled.entries) >= self._batch

    def _poll(self, after: int, with_objects: bool) -> Poll:
        with self._uow() as session:
            return changefeed.poll(session, after, self._batch, with_objects=with_objects)
