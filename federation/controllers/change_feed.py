"""A change feed over one table: the rows written since the last pass, found by their ``updated_at``.

Why: the execution and binding-status controllers must react to rows whose *own* queue columns belong to
another controller (a binding's ``needs_scheduling`` is the scheduler's, a Work's ``needs_sync`` is work
sync's). Every API write of a row sets ``updated_at``, so "written since T" needs no new column.

Invariants:
- The watermark is the largest ``updated_at`` seen in the rows themselves (never this process's clock),
  so only the writers' clocks matter. Each pass re-reads an ``overlap`` window before the watermark:
  a row committed late (long transaction) or by a writer with a slightly slow clock is still seen.
  Re-reading is harmless because consumers are idempotent (an unchanged row causes no write).
- The first pass, and one every ``resync_seconds`` of the injected clock, reads everything: the
  level-triggered safety net for what a watermark cannot see (a row deleted by hand, a clock far off).
- ``commit`` is called only after the consumer's transactions succeeded; a failed pass leaves the
  watermark where it was, so the next pass sees the same rows again.
- Deleted rows never show up here: consumers learn about deletions through a row that changed with them
  (a Work is tombstoned before it is removed) or through the full resync.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

DEFAULT_OVERLAP = timedelta(seconds=5)
DEFAULT_RESYNC_SECONDS = 600.0


@dataclass
class ChangeFeed:
    overlap: timedelta = DEFAULT_OVERLAP
    resync_seconds: float = DEFAULT_RESYNC_SECONDS
    _watermark: datetime | None = field(default=None, init=False)
    _last_full: datetime | None = field(default=None, init=False)
    _pending_full: bool = field(default=False, init=False)
    _pending_mark: datetime | None = field(default=None, init=False)

    def since(self, now: datetime) -> datetime | None:
        """Lower bound (exclusive) of ``updated_at`` to read this pass; None means every row."""
        due = self._last_full is None or (now - self._last_full).total_seconds() >= self.resync_seconds
        self._pending_full = due
        self._pending_mark = None  # a pass that failed before ``commit`` left nothing behind
        if due or self._watermark is None:
            return None
        return self._watermark - self.overlap

    def saw(self, stamps: Iterable[datetime]) -> None:
        """Note the ``updated_at`` of the rows read this pass (kept until ``commit``)."""
        for stamp in stamps:
            if self._pending_mark is None or stamp > self._pending_mark:
                self._pending_mark = stamp

    def commit(self, now: datetime) -> None:
        """The pass succeeded: move the watermark past the rows it read."""
        if self._pending_mark is not None and (
            self._watermark is None or self._pending_mark > self._watermark
        ):
            self._watermark = self._pending_mark
        if self._pending_full:
            self._last_full = now
        self._pending_mark = None
        self._pending_full = False

    def reset(self) -> None:
        """Forget everything: the next pass reads every row (e.g. after losing and regaining leadership)."""
        self._watermark = None
        self._last_full = None
