"""Deleting old rows of an append-mostly table (events, scheduling decisions) by age and by count.

Invariants:
- One call deletes at most ``batch`` rows, oldest first, by primary key: the caller runs each batch in its
  own short transaction, so writers of the same table never wait on one long delete.
- "Oldest" is by the table's time column, then by id (a total order, so the count bound is exact).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, select
from sqlalchemy.orm import InstrumentedAttribute, Session


def prune_before(
    session: Session, table: Any, stamp: InstrumentedAttribute[Any], before: datetime, batch: int
) -> int:
    """Delete at most ``batch`` rows stamped before ``before``; returns how many."""
    oldest = select(table.id).where(stamp < before).order_by(stamp, table.id)
    return _delete(session, table, oldest.limit(batch))


def trim_to(session: Session, table: Any, stamp: InstrumentedAttribute[Any], keep: int, batch: int) -> int:
    """Delete at most ``batch`` of the rows beyond the ``keep`` most recently stamped; returns how many."""
    newest = select(stamp, table.id).order_by(stamp.desc(), table.id.desc())
    boundary = session.execute(newest.offset(keep).limit(1)).first()
    if boundary is None:
        return 0
    last_stamp, last_id = boundary
    older = (stamp < last_stamp) | ((stamp == last_stamp) & (table.id <= last_id))
    oldest = select(table.id).where(older).order_by(stamp, table.id)
    return _delete(session, table, oldest.limit(batch))


def _delete(session: Session, table: Any, ids: Select[Any]) -> int:
    # The ids first, then a delete by primary key: SQLite has no DELETE ... LIMIT, and Postgres plans
    # "IN (subquery with LIMIT)" no better than this.
    found = list(session.scalars(ids))
    if not found:
        return 0
    session.execute(delete(table).where(table.id.in_(found)))
    return len(found)
