"""Column types that behave the same on Postgres and SQLite.

Invariants:
- ``JSONType`` is JSONB on Postgres (indexable, compact) and JSON text on SQLite; Python sees dicts/lists.
- ``JSONRecord`` is JSON text on both: for large write-mostly documents that SQL never looks inside (a
  scheduling decision's per-cluster explanation, a change-log event's object). Postgres stores ``json`` as
  the text it was given, cheaper to write than ``jsonb``, which parses and re-encodes it (~4x for a
  decision's explanation, ~1.5x for an event's object).
- ``UTCDateTime`` accepts only timezone-aware datetimes and always returns timezone-aware UTC ones.
  Postgres stores ``timestamptz``; SQLite stores naive UTC text, whose lexical order is chronological
  because SQLAlchemy always renders the same fixed-width format, so ``<=`` comparisons in SQL stay correct.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

JSONType: TypeEngine[Any] = JSON().with_variant(JSONB(), "postgresql")
JSONRecord: TypeEngine[Any] = JSON()


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            # A naive datetime is a bug (which zone?); refuse it instead of guessing.
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utcnow() -> datetime:
    """The default clock: the current time, timezone-aware UTC."""
    return datetime.now(UTC)
