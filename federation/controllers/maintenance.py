"""Database maintenance: when the Postgres server runs without autovacuum, the leader vacuums and analyzes
the store's tables itself, as autovacuum would (``store.maintenance`` says when and why).

Runs under the leader lease like every reconciler (one replica maintains), every
``database.maintenance_interval_seconds``. With autovacuum on, a pass is the one statement that finds
nothing due; on SQLite, or with ``database.self_maintenance`` false, this reconciler is not built.

Invariants:
- A pass holds no transaction open while it maintains: the check is one read in a short transaction of
  its own, the VACUUMs and ANALYZEs run after it on an autocommit connection (``store.maintenance.run``).
- Nothing it does is an API change: it wakes no controller, and the log says a table's maintenance at
  debug level only (autovacuum itself logs nothing by default).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from federation.controllers.runtime import Outcome
from federation.store import maintenance
from federation.store.db import UnitOfWork

log = logging.getLogger(__name__)


@dataclass
class DatabaseMaintenance:
    uow: UnitOfWork
    interval_seconds: float
    name: str = "database-maintenance"
    watches: frozenset[str] = frozenset()

    def reconcile(self) -> Outcome:
        with self.uow() as session:
            due = maintenance.due(session.connection())
        if not due:
            return Outcome()
        done = maintenance.run(self.uow.engine(), due)
        for item in done:
            log.debug("database maintenance: %s", item.statement)
        return Outcome(len(done))  # no kind: maintenance wakes no controller
