"""Test helpers for the store suite: a fake clock and a SQL statement counter."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, event

from tests.sql_counter import TRANSACTION_CONTROL

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class FakeClock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@dataclass
class StatementLog:
    statements: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.statements)


@contextmanager
def count_statements(engine: Engine) -> Iterator[StatementLog]:
    """Every SQL statement the engine sends inside the block, transaction control left out (SQLite's
    ``BEGIN IMMEDIATE`` is sent as a statement; the drivers' own BEGIN is not)."""
    log = StatementLog()

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if not statement.lstrip().upper().startswith(TRANSACTION_CONTROL):
            log.statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield log
    finally:
        event.remove(engine, "before_cursor_execute", record)
