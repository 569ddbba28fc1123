"""What work-status collection reads of the Works it polls: every applied Work on a Push cluster once,
then only the Works written since (a change feed over ``updated_at``), so a round at idle reads no Work.

Invariants:
- ``tracked`` is True for an applied, not tombstoned Work on a cluster that is not Pull mode: the Works
  ``WorkRepository.applied_on_push_clusters`` returns (``tracked_work_state_pages``). A changed Work that is
  not tracked any more is returned too by ``work_states`` (its reader forgets it).
- Only the columns collection needs are read (no labels, annotations, claim columns), and of the manifests
  only their identities, computed by the database (``works.manifest_identities``): a first read at 30,000
  Works decoded 30,000 manifest bodies to keep four strings of each. The full read comes in pages from one
  streamed statement, so its reader never holds every Work's manifest statuses at once. After the first
  read, ``work_stamps_since`` says which Works were written (id, stamp, resourceVersion: no JSON) and
  ``work_states`` reads only those the change feed has not handed out at that version already.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store.dialect import among
from federation.store.probes import PULL
from federation.store.tables import ClusterRow, WorkRow
from federation.store.works import IdentityEntry, identity_entries, manifest_identities

# Works per page of the full read: the manifest statuses of a page are a few MB of Python objects at most.
PAGE_SIZE = 2000


@dataclass(frozen=True, slots=True)
class WorkState:
    """One Work as status collection sees it."""

    id: int
    updated_at: datetime
    resource_version: int
    cluster: str
    tracked: bool
    manifests: Sequence[IdentityEntry]  # (apiVersion, kind, namespace, name) of each, in order
    manifest_statuses: Sequence[Any]


def tracked_work_state_pages(session: Session, page_size: int | None = None) -> Iterator[list[WorkState]]:
    """Every tracked Work (applied, on a cluster that is not Pull mode: the first read, a resync), by pages of
    ``page_size`` (default ``PAGE_SIZE``) from one statement streamed (a server-side cursor on Postgres): a
    reader that handles a page before it asks for the next holds one page, not 30,000 Works' manifest
    statuses at once."""
    statement = _columns(session).where(WorkRow.applied.is_(True), ~_ON_PULL)
    result = session.execute(statement.execution_options(yield_per=page_size or PAGE_SIZE))
    for rows in result.partitions():
        yield [_state(*row) for row in rows]


def work_stamps_since(session: Session, since: datetime) -> list[tuple[int, datetime, int, int]]:
    """(id, updated_at, id, resourceVersion) of the Works written after ``since``: a change feed's rows."""
    w = WorkRow
    statement = select(w.id, w.updated_at, w.resource_version).where(w.updated_at > since)
    return [(int(i), at, int(i), int(rv)) for i, at, rv in session.execute(statement.order_by(w.id))]


def work_states(session: Session, ids: Sequence[int]) -> list[WorkState]:
    """The Works with these ids (absent ids: deleted since)."""
    if not ids:
        return []
    return [_state(*row) for row in session.execute(_columns(session).where(among(session, WorkRow.id, ids)))]


def push_cluster_names(session: Session) -> set[str]:
    """The clusters whose Works are polled (every cluster that is not Pull mode)."""
    statement = select(ClusterRow.name).where(ClusterRow.sync_mode.is_distinct_from(PULL))
    return set(session.scalars(statement))


# Whether a Work's cluster is Pull mode (its agent reports its status: not polled).
_ON_PULL = WorkRow.cluster_name.in_(select(ClusterRow.name).where(ClusterRow.sync_mode == PULL))


def _columns(session: Session) -> Any:
    w = WorkRow
    return select(
        w.id,
        w.updated_at,
        w.resource_version,
        w.cluster_name,
        w.applied,
        _ON_PULL.label("on_pull"),
        manifest_identities(session.get_bind().dialect.name).label("identities"),
        w.status["manifestStatuses"].label("manifest_statuses"),  # not the Work's conditions
        w.metadata_extra["deletionTimestamp"].as_string().label("deleting_since"),
    ).order_by(w.id)


def _state(
    work_id: int,
    updated_at: datetime,
    resource_version: int,
    cluster: str,
    applied: bool | None,
    on_pull: bool,
    identities: Any,
    manifest_statuses: Any,
    deleting_since: str | None,
) -> WorkState:
    """One row of ``_columns``, its columns in order."""
    tracked = bool(applied) and not on_pull and not deleting_since
    return WorkState(
        int(work_id),
        updated_at,
        int(resource_version),
        str(cluster),
        tracked,
        identity_entries(identities),
        manifest_statuses or [],
    )
