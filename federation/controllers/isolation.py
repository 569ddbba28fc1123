"""One bad object never blocks another: per-item savepoints, failure records and back-off.

Invariants:
- Batches are written whole first (``batch_or_each``: one flush in a savepoint); only if that fails is
  each item written in its own savepoint, so the common case pays one flush and the bad case the old price.
- ``isolated`` runs one item's writes in a SAVEPOINT of the batch's transaction. An exception rolls back
  that item's writes only; the batch goes on and commits the others. An error the savepoint cannot
  contain (the connection itself is gone) still propagates: that is an outage, not a bad item.
- A failed item is said on itself: a Warning event (the controller's reason, the error text) that
  ``describe`` shows, and one log line without a traceback; a race (``Conflict``, ``NotFound``) is
  retried quietly, it says nothing about the object.
- Claimed rows back off through their claim columns (``claims.fail``). Controllers that follow a change
  feed have no claim columns; they keep a ``RetryBook``: a failed id is retried after an exponential
  back-off, or at once when the feed shows the object written again (new input may be the fix).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session

from federation.store.claims import Backoff
from federation.store.errors import Conflict, NotFound
from federation.store.events import EventRepository, InvolvedObject
from federation.store.leases import LeaseLost

log = logging.getLogger(__name__)

T = TypeVar("T")
# Races with another writer: retried, never recorded as a problem of the object.
TRANSIENT = (Conflict, NotFound)
MAX_MESSAGE = 1024
# The database itself failing (connection lost, locked, timed out), or this process no longer leader (its
# fence refused the write): the whole pass stops.
OUTAGE = (OperationalError, InterfaceError, LeaseLost)


@dataclass(frozen=True, slots=True)
class Failed:
    """An item whose work raised; ``message`` is what the event and the log say."""

    error: Exception

    @property
    def message(self) -> str:
        text = f"{type(self.error).__name__}: {self.error}"
        return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."

    @property
    def transient(self) -> bool:
        return isinstance(self.error, TRANSIENT)


def isolated(session: Session, work: Callable[[], T]) -> T | Failed:
    """Run ``work`` in a savepoint; its result, or ``Failed`` with its writes rolled back."""
    try:
        with session.begin_nested():
            return work()
    except OUTAGE:
        raise
    except Exception as exc:
        if not session.is_active:  # the savepoint could not contain it
            raise
        return Failed(exc)


def batch_or_each(session: Session, batch: Callable[[], T], each: Callable[[], T], what: str) -> T:
    """Run ``batch`` (a whole batch's writes, one flush) in a savepoint; if it fails, roll it back and run
    ``each`` instead (the same writes one savepoint per item, so only the culprit fails)."""
    outcome = isolated(session, batch)
    if not isinstance(outcome, Failed):
        return outcome
    log.info("%s: the batch write failed (%s); writing one by one", what, outcome.message)
    return each()


def record_failure(
    session: Session,
    involved: InvolvedObject,
    failed: Failed,
    *,
    reason: str,
    source: str,
    now: datetime,
) -> None:
    """Say why the item failed, on the item (an event) and once in the log; races stay quiet."""
    what = f"{involved.kind} {involved.namespace}/{involved.name}".replace(" /", " ")
    if failed.transient:
        log.info("%s: %s changed concurrently (%s); retrying", source, what, failed.message)
        return
    log.warning("%s: %s failed: %s", source, what, failed.message)
    EventRepository(session).record(involved, "Warning", reason, failed.message, now=now, source=source)


@dataclass
class RetryBook:
    """Back-off for items without claim columns: id → (consecutive failures, next attempt, stamp seen)."""

    backoff: Backoff = field(default_factory=Backoff)
    _entries: dict[int, tuple[int, datetime, datetime | None]] = field(default_factory=dict)
    # The newest write stamp the feed showed for each id in the current pass (see ``select``).
    _stamps: dict[int, datetime] = field(default_factory=dict)

    def failed(self, key: int, now: datetime) -> datetime:
        """Count a failure of ``key``: it waits until the returned time or until it is written again."""
        failures = self._entries.get(key, (0, now, None))[0] + 1
        retry_at = now + timedelta(seconds=self.backoff.delay(failures))
        self._entries[key] = (failures, retry_at, self._stamps.get(key))
        return retry_at

    def succeeded(self, keys: Iterable[int]) -> None:
        for key in keys:
            self._entries.pop(key, None)

    def backing_off(self) -> set[int]:
        """Every id backing off."""
        return set(self._entries)

    def due(self, now: datetime) -> set[int]:
        """The failed ids whose back-off is over."""
        return {key for key, (_, at, _) in self._entries.items() if at <= now}

    def waiting(self, key: int, now: datetime, stamp: datetime | None = None) -> bool:
        """True while ``key`` backs off and nothing newer than its failure was written."""
        entry = self._entries.get(key)
        if entry is None or entry[1] <= now:
            return False
        seen = entry[2]
        return stamp is None or seen is None or stamp <= seen

    def select(self, stamped: Iterable[tuple[int, datetime]], now: datetime) -> set[int]:
        """The ids to work on now: those a feed reports (unless backing off with nothing newer written)
        and the failed ones whose back-off is over."""
        latest: dict[int, datetime] = {}
        for key, at in stamped:
            latest[key] = max(at, latest.get(key, at))
        self._stamps = latest
        fresh = {key for key, at in latest.items() if not self.waiting(key, now, at)}
        return fresh | self.due(now)

    def failures(self, key: int) -> int:
        return self._entries.get(key, (0, None, None))[0]
