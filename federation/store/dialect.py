"""The one place that knows which backend a session talks to (for upserts, the only SQL that differs)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def insert(session: Session, table: Table) -> Any:
    """An INSERT supporting ``on_conflict_do_nothing/do_update`` for the session's backend."""
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)
