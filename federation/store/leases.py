"""Leases: member-cluster heartbeats and the controller leader lease.

Invariants:
- One row per (kind, name). ``expires_at = renew_time + duration`` is stored, so expiry is a plain
  comparison on both backends. A lease is expired when ``expires_at <= now``.
- Leader acquisition is one conditional UPDATE (``holder is me OR nobody OR expired``) after an
  insert-if-missing, so two candidates can never both win; time is always passed in (``now``), never read.
- The fence (``assert_leader``): a controller transaction that writes first reads the lease row FOR SHARE
  and checks it still holds it unexpired. A successor's takeover is an UPDATE of that row, so it waits
  until the transaction ends: the old leader's last write either commits before the takeover or not at
  all. (SQLite has one writer at a time, so the check alone is enough there.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, Update, bindparam, case, exists, literal, or_, select, update
from sqlalchemy.orm import Session

from federation.store import dialect
from federation.store.tables import ClusterRow, LeaseRow, table_of
from federation.store.types import UTCDateTime

CLUSTER = "cluster"
LEADER = "leader"
DEFAULT_LEADER_LEASE = "controllers"


class LeaseLost(Exception):
    """This process no longer holds the leader lease: its controller writes are refused (rolled back)."""


@dataclass(frozen=True, slots=True)
class Lease:
    kind: str
    name: str
    holder: str | None
    acquired_at: datetime | None
    renew_time: datetime | None
    duration_seconds: int
    expires_at: datetime | None
    transitions: int

    @classmethod
    def from_row(cls, row: LeaseRow) -> Lease:
        return cls(
            row.kind,
            row.name,
            row.holder,
            row.acquired_at,
            row.renew_time,
            row.duration_seconds,
            row.expires_at,
            row.transitions,
        )

    def expired(self, now: datetime) -> bool:
        return self.expires_at is None or self.expires_at <= now


# The leases table's columns an UPDATE ... RETURNING reads back: one per ``Lease`` field, of the same name.
_LEASE_FIELDS = tuple(f.name for f in fields(Lease))


def _renewal(registered_only: bool) -> Update:
    """A cluster lease's renewal (what ``_taken`` sets, the lease read back), built once with its values bound
    per call: building it per renewal (the clauses, then SQLAlchemy's cache key of them) was a large part of
    a renewal's CPU in the API, which 1,000 pull agents call 100 times a second (bench/RESULTS.md, "Lease
    renewals"). ``registered_only``: the UPDATE matches only while the cluster is registered."""
    table = table_of(LeaseRow)
    holder = bindparam("renewed_by", type_=table.c.holder.type)
    now = bindparam("renewed_at", type_=UTCDateTime())
    name = bindparam("renewed_name", type_=table.c.name.type)
    same_holder = table.c.holder == holder
    conditions = [table.c.kind == CLUSTER, table.c.name == name]
    if registered_only:
        conditions.append(exists().where(ClusterRow.name == name))
    values = {
        "holder": holder,
        "renew_time": now,
        "duration_seconds": bindparam("renewed_for", type_=table.c.duration_seconds.type),
        "expires_at": bindparam("renewed_until", type_=UTCDateTime()),
        "acquired_at": case((same_holder, table.c.acquired_at), else_=now),
        "transitions": case((same_holder, table.c.transitions), else_=table.c.transitions + 1),
    }
    return update(table).where(*conditions).values(values).returning(*(table.c[f] for f in _LEASE_FIELDS))


_RENEWALS = {registered_only: _renewal(registered_only) for registered_only in (False, True)}


class LeaseRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # -- cluster heartbeats ----------------------------------------------------------------------------

    def renew_cluster_lease(self, cluster: str, holder: str, now: datetime, duration_seconds: int) -> Lease:
        """Record a heartbeat from ``cluster``'s agent (creating the lease on first renewal)."""
        lease = self._renew(cluster, holder, now, duration_seconds, registered_only=False)
        assert lease is not None  # only a registered-only renewal is refused
        return lease

    def renew_registered_cluster_lease(
        self, cluster: str, holder: str, now: datetime, duration_seconds: int
    ) -> Lease | None:
        """``renew_cluster_lease`` for a cluster that is registered; None (nothing written) when it is not.
        Every renewal but the first is one statement: the UPDATE checks the cluster and returns the lease
        (1,000 pull agents renew 100 times a second)."""
        return self._renew(cluster, holder, now, duration_seconds, registered_only=True)

    def _renew(
        self, cluster: str, holder: str, now: datetime, duration_seconds: int, *, registered_only: bool
    ) -> Lease | None:
        statement = _RENEWALS[registered_only]
        params = {
            "renewed_name": cluster,
            "renewed_by": holder,
            "renewed_at": now,
            "renewed_for": duration_seconds,
            "renewed_until": now + timedelta(seconds=duration_seconds),
        }
        row = self.session.execute(statement, params).one_or_none()
        if row is None:  # the first renewal (the row is made, then taken like any other), or no such cluster
            registered = exists().where(ClusterRow.name == cluster)
            if registered_only and not self.session.scalar(select(registered)):
                return None
            self._ensure(CLUSTER, cluster, duration_seconds)
            row = self.session.execute(statement, params).one()
        return Lease(**row._mapping)

    def renew_cluster_leases(self, clusters: Sequence[str], now: datetime, duration_seconds: int) -> None:
        """Heartbeats for many clusters at once, each holding its own lease (the push-mode status pass):
        two statements whatever the number of clusters."""
        if not clusters:
            return
        rows = [
            {"kind": CLUSTER, "name": name, "duration_seconds": duration_seconds, "transitions": 0}
            for name in clusters
        ]
        insert = dialect.insert(self.session, table_of(LeaseRow)).values(rows)
        self.session.execute(insert.on_conflict_do_nothing(index_elements=["kind", "name"]))
        own = LeaseRow.holder == LeaseRow.name
        self.session.execute(
            update(table_of(LeaseRow))
            .where(LeaseRow.kind == CLUSTER, LeaseRow.name.in_(list(clusters)))
            .values(
                holder=LeaseRow.name,
                renew_time=now,
                duration_seconds=duration_seconds,
                expires_at=now + timedelta(seconds=duration_seconds),
                acquired_at=case((own, LeaseRow.acquired_at), else_=literal(now, UTCDateTime())),
                transitions=case((own, LeaseRow.transitions), else_=LeaseRow.transitions + 1),
            )
        )

    def cluster_leases(self) -> list[Lease]:
        statement = select(LeaseRow).where(LeaseRow.kind == CLUSTER).order_by(LeaseRow.name)
        return [Lease.from_row(row) for row in self._fresh(statement)]

    def get(self, kind: str, name: str) -> Lease | None:
        statement = select(LeaseRow).where(LeaseRow.kind == kind, LeaseRow.name == name)
        row = next(iter(self._fresh(statement)), None)
        return None if row is None else Lease.from_row(row)

    # -- leader election -------------------------------------------------------------------------------

    def try_acquire(
        self, holder: str, now: datetime, duration_seconds: int, name: str = DEFAULT_LEADER_LEASE
    ) -> bool:
        """Acquire or renew the leader lease; False while another holder's lease is unexpired."""
        self._ensure(LEADER, name, duration_seconds)
        statement = (
            update(table_of(LeaseRow))
            .where(
                LeaseRow.kind == LEADER,
                LeaseRow.name == name,
                or_(LeaseRow.holder == holder, LeaseRow.holder.is_(None), LeaseRow.expires_at <= now),
            )
            .values(**self._taken(holder, now, duration_seconds))
        )
        return bool(self.session.execute(statement).rowcount)  # type: ignore[attr-defined]

    def release(self, holder: str, now: datetime, name: str = DEFAULT_LEADER_LEASE) -> bool:
        """Give up the leader lease if ``holder`` has it, so a successor need not wait for expiry."""
        statement = (
            update(table_of(LeaseRow))
            .where(LeaseRow.kind == LEADER, LeaseRow.name == name, LeaseRow.holder == holder)
            .values(holder=None, expires_at=now)
        )
        return bool(self.session.execute(statement).rowcount)  # type: ignore[attr-defined]

    def assert_leader(self, holder: str, now: datetime, name: str = DEFAULT_LEADER_LEASE) -> None:
        """Raise ``LeaseLost`` unless ``holder`` holds the leader lease unexpired at ``now``; on Postgres the
        lease row stays share-locked until the transaction ends (see the module docstring)."""
        statement = (
            select(LeaseRow.holder, LeaseRow.expires_at)
            .where(LeaseRow.kind == LEADER, LeaseRow.name == name)
            .with_for_update(read=True)
        )
        row = self.session.execute(statement).first()
        if row is None or row.holder != holder or row.expires_at is None or row.expires_at <= now:
            current = "nobody" if row is None or row.holder is None else row.holder
            raise LeaseLost(f"leader lease {name!r} is not held by {holder} (holder: {current})")

    def leader(self, now: datetime, name: str = DEFAULT_LEADER_LEASE) -> str | None:
        lease = self.get(LEADER, name)
        return None if lease is None or lease.expired(now) else lease.holder

    # -- helpers ---------------------------------------------------------------------------------------

    def _ensure(self, kind: str, name: str, duration_seconds: int) -> None:
        statement = dialect.insert(self.session, table_of(LeaseRow)).values(
            kind=kind, name=name, duration_seconds=duration_seconds, transitions=0
        )
        self.session.execute(statement.on_conflict_do_nothing(index_elements=["kind", "name"]))

    @staticmethod
    def _taken(holder: str, now: datetime, duration_seconds: int) -> dict[str, object]:
        same_holder = LeaseRow.holder == holder
        return {
            "holder": holder,
            "renew_time": now,
            "duration_seconds": duration_seconds,
            "expires_at": now + timedelta(seconds=duration_seconds),
            # Typed literal: UTCDateTime normalizes the zone; an untyped datetime would bind as given.
            "acquired_at": case((same_holder, LeaseRow.acquired_at), else_=literal(now, UTCDateTime())),
            "transitions": case((same_holder, LeaseRow.transitions), else_=LeaseRow.transitions + 1),
        }

    def _fresh(self, statement: Select[Any]) -> list[LeaseRow]:
        # Leases are written with Core UPDATEs; bypass stale identity-map copies.
        return list(self.session.scalars(statement.execution_options(populate_existing=True)))
