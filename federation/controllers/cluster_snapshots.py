"""The member clusters as the scheduling engine sees them (``ClusterSnapshot``), read from the store.

``SnapshotCache`` keeps the snapshots of one scheduler between its cycles: a cluster is read and parsed
again only when its row was written since (its ``resource_version`` moved), so an unchanged cluster is the
very same snapshot object from one batch to the next. That is what lets a ``CycleMemo`` carry the
per-cluster work of one batch over to the next (it reuses a result only for the same object).

Invariants:
- ``load`` answers every cluster in the store, ordered by name, as of the caller's transaction: one
  query of (id, resourceVersion) pairs, plus one for the rows that changed (none in the steady state);
  the first call, with nothing kept, reads every row in one query.
- Every write of a cluster moves its ``resource_version`` (the change log's revision), so a snapshot kept
  for an unchanged version is exactly what parsing the row again would give.
- A malformed cluster is left out (and logged once per version), as ``cluster_snapshots`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.scheduling import snapshot
from federation.scheduling.types import ClusterSnapshot
from federation.store.dialect import among
from federation.store.manifest import view
from federation.store.tables import ClusterRow

log = logging.getLogger(__name__)


def cluster_snapshots(session: Session, ids: Sequence[int] | None = None) -> list[ClusterSnapshot]:
    """Every cluster (or those with these row ids) as an engine snapshot; a malformed one is skipped."""
    statement = select(ClusterRow).order_by(ClusterRow.name)
    if ids is not None:
        statement = statement.where(among(session, ClusterRow.id, ids))
    return [s for s in (_parsed(row) for row in session.scalars(statement)) if s is not None]


def _parsed(row: ClusterRow) -> ClusterSnapshot | None:
    try:
        # A view: ``from_cluster`` copies what it keeps.
        return snapshot.from_cluster(view(row))
    except ValueError as exc:
        log.warning("cluster %s is left out of scheduling: %s", row.name, exc)
        return None


class SnapshotCache:
    """Cluster snapshots by row id, each with the ``resource_version`` it was parsed at (see the module)."""

    __slots__ = ("_by_id",)

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[int, ClusterSnapshot | None]] = {}

    def load(self, session: Session) -> list[ClusterSnapshot]:
        """Every cluster, ordered by name; only the rows written since the last call are read whole (the
        first call reads them all, in one query)."""
        if not self._by_id:
            rows = session.scalars(select(ClusterRow).order_by(ClusterRow.name))
            self._by_id = {row.id: (row.resource_version, _parsed(row)) for row in rows}
            return [s for _, s in self._by_id.values() if s is not None]
        versions = session.execute(
            select(ClusterRow.id, ClusterRow.resource_version).order_by(ClusterRow.name)
        ).all()
        known = self._by_id
        stale = [i for i, version in versions if known.get(i, (None,))[0] != version]
        fresh: dict[int, tuple[int, ClusterSnapshot | None]] = {}
        if stale:
            rows = session.scalars(select(ClusterRow).where(among(session, ClusterRow.id, stale)))
            fresh = {row.id: (row.resource_version, _parsed(row)) for row in rows}
        # A row written between the two reads is taken as read whole; deleted clusters drop out.
        self._by_id = {i: fresh.get(i) or known[i] for i, _ in versions if i in fresh or i in known}
        ordered = (self._by_id.get(i) for i, _ in versions)
        return [entry[1] for entry in ordered if entry is not None and entry[1] is not None]
