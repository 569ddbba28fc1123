"""Retention of append-mostly records: Events last seen more than ``events.ttl_seconds`` ago
(kube-apiserver's ``--event-ttl``), then the least recently seen beyond ``events.max_count``; scheduling
decisions the same way under ``decisions.*``.

Invariants:
- Each batch of at most ``events.prune_batch_size`` rows is its own short transaction, so recorders (which
  upsert into the same table) never wait on one long delete.
- Each of the two deletions stops after ``MAX_BATCHES`` batches and leaves the rest to the next pass: a
  backlog never holds the runner's thread for long.
- Nothing else reads the outcome: deleting events wakes no controller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.orm import Session

from federation.controllers.runtime import Clock, Outcome
from federation.settings import EventSettings
from federation.store.db import UnitOfWork
from federation.store.decisions import DecisionRepository
from federation.store.events import EventRepository

MAX_BATCHES = 100


class Prunable(Protocol):
    def prune(self, before: datetime, batch: int = 1000) -> int: ...

    def trim(self, keep: int, batch: int = 1000) -> int: ...


@dataclass
class Retention:
    """Deletes one kind of record by age, then by count; ``records`` opens its repository on a session."""

    uow: UnitOfWork
    clock: Clock
    settings: EventSettings
    records: Callable[[Session], Prunable]
    name: str
    watches: frozenset[str] = frozenset()
    interval_seconds: float = field(init=False)

    def __post_init__(self) -> None:
        self.interval_seconds = self.settings.prune_interval_seconds

    def reconcile(self) -> Outcome:
        cutoff = self.clock.now() - timedelta(seconds=self.settings.ttl_seconds)
        batch = self.settings.prune_batch_size
        expired = self._in_batches(lambda records: records.prune(cutoff, batch))
        surplus = self._in_batches(lambda records: records.trim(self.settings.max_count, batch))
        return Outcome(expired + surplus)

    def _in_batches(self, delete: Callable[[Prunable], int]) -> int:
        deleted = 0
        for _ in range(MAX_BATCHES):
            with self.uow() as session:
                count = delete(self.records(session))
            deleted += count
            if count < self.settings.prune_batch_size:
                break
        return deleted


def event_retention(uow: UnitOfWork, clock: Clock, settings: EventSettings) -> Retention:
    return Retention(uow, clock, settings, EventRepository, "event-retention")


def decision_retention(uow: UnitOfWork, clock: Clock, settings: EventSettings) -> Retention:
    return Retention(uow, clock, settings, DecisionRepository, "decision-retention")
