"""Controller checkpoints: one row per change-feed controller, read at its first pass and written after a
pass that moved it (``controllers.feed_checkpoint`` says what is in one).

Invariants:
- A save is one upsert by primary key, in the caller's (fenced) transaction.
- A checkpoint written by another federation version loads as None: what a controller derives from rows
  (a rendered Work) may differ between versions, so a new version starts from a full pass.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation import __version__
from federation.store import dialect
from federation.store.tables import ControllerCheckpointRow, table_of

CODE_VERSION = __version__


def load(session: Session, name: str, version: str = CODE_VERSION) -> dict[str, Any] | None:
    row = session.execute(
        select(ControllerCheckpointRow.code_version, ControllerCheckpointRow.state).where(
            ControllerCheckpointRow.name == name
        )
    ).first()
    if row is None or row.code_version != version:
        return None
    return dict(row.state)


def save(
    session: Session, name: str, state: dict[str, Any], now: datetime, version: str = CODE_VERSION
) -> None:
    values = {"name": name, "code_version": version, "state": state, "updated_at": now}
    statement = dialect.insert(session, table_of(ControllerCheckpointRow)).values(**values)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["name"], set_={k: v for k, v in values.items() if k != "name"}
        )
    )
