"""Keeps the change log (what watches stream from) to its window: rows older than
``api.watch_window_seconds`` go, in batches of their own transactions, so pruning never holds a long lock
on a busy log. A watch from a revision older than what is left gets 410 Expired and lists again, as
kube-apiserver answers after etcd compacted.

Runs under the leader lease like every reconciler (one replica prunes), a few times per window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from federation.controllers.runtime import Clock, Outcome
from federation.store import changefeed
from federation.store.db import UnitOfWork

# Rows deleted per transaction, and transactions per pass.
PRUNE_BATCH = 1000
MAX_BATCHES = 100
# A pass at least this often, and at least four times per window (so the log holds at most ~1.25 windows).
LONGEST_INTERVAL_SECONDS = 60.0


@dataclass
class ChangeLogPruner:
    uow: UnitOfWork
    clock: Clock
    window_seconds: float
    name: str = "change-log-pruner"
    watches: frozenset[str] = frozenset()
    batch: int = PRUNE_BATCH
    interval_seconds: float = field(init=False)

    def __post_init__(self) -> None:
        self.interval_seconds = min(LONGEST_INTERVAL_SECONDS, self.window_seconds / 4)

    def reconcile(self) -> Outcome:
        before = self.clock.now() - timedelta(seconds=self.window_seconds)
        pruned = 0
        for _ in range(MAX_BATCHES):  # a backlog is left to the next pass: the runner's thread is shared
            with self.uow() as session:
                deleted = changefeed.prune(session, before, self.batch)
            pruned += deleted
            if deleted < self.batch:
                break
        return Outcome(pruned)  # deleting log rows wakes no controller
