"""Test helpers for the store suite: a fake clock and a SQL statement counter."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, event

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
    """Every SQL statement the engine sends inside the block."""
    log = StatementLog()

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        log.statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield log
    finally:
        event.remove(engine, "before_cursor_execute", record)
