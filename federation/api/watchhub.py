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
  polls, and the event loop never blocks on the database.
- State is touched only on the event loop (the poll's result is applied there); threads read
  ``resolved``, a plain int.
- When the server stops (``stopping()``), every subscription is closed and the task ends, so uvicorn's
  graceful shutdown is not held up by open watches. A subscription that falls ``capacity`` events behind
  is closed too: its client watches again from the last revision it got (client-go and kubectl do).
"""

from __future__ import annotations

import asyncio
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
    ) -> None:
        self._uow = uow
        self._poll_seconds = poll_seconds
        self._stopping = stopping
        self._batch = batch
        self._subscriptions: set[Subscription] = set()
        self._resolver: Resolver | None = None
        self._starting: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

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
        assert self._starting is not None
        async with self._starting:
            if self._resolver is None:
                self._resolver = Resolver(await run_in_threadpool(self._start_position))
                self._task = asyncio.create_task(self._run(), name="watch-change-hub")

    def _start_position(self) -> int:
        with self._uow() as session:
            return changefeed.start_position(session)

    def subscribe(self, decide: Decide, capacity: int = CAPACITY) -> Subscription:
        subscription = Subscription(decide, self.resolved, capacity)
        if self.stopped:
            subscription.close()
        else:
            self._subscriptions.add(subscription)
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
                await asyncio.sleep(self._poll_seconds)
        for subscription in list(self._subscriptions):
            self.unsubscribe(subscription)

    async def step(self) -> bool:
        """One poll, its final events offered to the subscriptions; True when the batch was full."""
        assert self._resolver is not None
        with_objects = bool(self._subscriptions)
        polled = await run_in_threadpool(self._poll, self._resolver.resolved, with_objects)
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
