"""The application-failover controller's memory of workload health (``workload_health``): one row per
(binding, target cluster), so the unhealthy time survives a restart.

Invariants:
- Every method is one statement, whatever the number of bindings or clusters: a bulk read for a set of
  bindings, an upsert of many observations (``ON CONFLICT (binding_id, cluster_name) DO UPDATE``), a
  delete of many (binding, cluster) pairs, a delete of every row outside a query of bindings.
- Rows go with their binding (ON DELETE CASCADE); rows of clusters a binding no longer targets are the
  caller's to forget.
- Never commits: the caller's transaction decides.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import Select, delete, select
from sqlalchemy.orm import Session

from federation.model.budget import HealthRecord
from federation.store import dialect
from federation.store.tables import WorkloadHealthRow, table_of

_UPDATED = (
    "health",
    "unhealthy_since",
    "unhealthy_seconds",
    "healthy_since",
    "healthy_seconds_before_failure",
    "observed_at",
)


@dataclass(frozen=True, slots=True)
class Observation:
    """The record of one (binding, cluster) to store."""

    binding_id: int
    cluster: str
    record: HealthRecord


class HealthRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def for_bindings(self, binding_ids: Collection[int]) -> dict[int, dict[str, HealthRecord]]:
        """binding id → cluster → record, for these bindings (absent: never observed)."""
        if not binding_ids:
            return {}
        bound = dialect.among(self.session, WorkloadHealthRow.binding_id, sorted(binding_ids))
        statement = select(WorkloadHealthRow).where(bound)
        result: dict[int, dict[str, HealthRecord]] = {}
        for row in self.session.scalars(statement):
            result.setdefault(row.binding_id, {})[row.cluster_name] = _record(row)
        return result

    def upsert(self, observations: Sequence[Observation]) -> None:
        """Insert or replace the records of these (binding, cluster) pairs."""
        if not observations:
            return
        table = table_of(WorkloadHealthRow)
        statement = dialect.insert(self.session, table)
        statement = statement.on_conflict_do_update(
            index_elements=[table.c.binding_id, table.c.cluster_name],
            set_={name: statement.excluded[name] for name in _UPDATED},
        )
        self.session.execute(statement, [_values(o) for o in observations])

    def forget(self, pairs: Collection[tuple[int, str]]) -> None:
        """Delete the rows of these (binding id, cluster) pairs."""
        if not pairs:
            return
        key = (WorkloadHealthRow.binding_id, WorkloadHealthRow.cluster_name)
        self.session.execute(
            delete(WorkloadHealthRow).where(dialect.pairs_among(self.session, key, sorted(pairs)))
        )

    def forget_bindings(self, binding_ids: Collection[int]) -> None:
        """Delete every row of these bindings."""
        if binding_ids:
            self.session.execute(
                delete(WorkloadHealthRow).where(
                    dialect.among(self.session, WorkloadHealthRow.binding_id, sorted(binding_ids))
                )
            )

    def keep_only(self, binding_ids: Select[int]) -> None:
        """Delete every row of any binding ``binding_ids`` (a query of ids) does not return: those that
        left application failover while nobody watched."""
        self.session.execute(
            delete(WorkloadHealthRow).where(
                WorkloadHealthRow.binding_id.not_in(binding_ids.scalar_subquery())
            )
        )


def _record(row: WorkloadHealthRow) -> HealthRecord:
    return HealthRecord(
        health=row.health,
        observed_at=row.observed_at,
        unhealthy_since=row.unhealthy_since,
        unhealthy_seconds=float(row.unhealthy_seconds),
        healthy_since=row.healthy_since,
        healthy_seconds_before_failure=float(row.healthy_seconds_before_failure),
    )


def _values(observation: Observation) -> dict[str, object]:
    record = observation.record
    return {
        "binding_id": observation.binding_id,
        "cluster_name": observation.cluster,
        "health": record.health,
        "unhealthy_since": record.unhealthy_since,
        "unhealthy_seconds": record.unhealthy_seconds,
        "healthy_since": record.healthy_since,
        "healthy_seconds_before_failure": record.healthy_seconds_before_failure,
        "observed_at": record.observed_at,
    }
