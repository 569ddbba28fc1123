"""Count the SQL statements an action sends, to pin a controller's hot path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def count_statements(engine: Engine, action: Callable[[], Any]) -> list[str]:
    """The statements `action` sent through `engine`, transaction control left out."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        if not statement.lstrip().upper().startswith(TRANSACTION_CONTROL):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        action()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return seen
