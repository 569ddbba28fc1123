"""A change feed over one table: the rows written since the last pass, found by their ``updated_at``.

Why: the execution and binding-status controllers must react to rows whose *own* queue columns belong to
another controller (a binding's ``needs_scheduling`` is the scheduler's, a Work's ``needs_sync`` is work
sync's). Every API write of a row sets ``updated_at``, so "written since T" needs no new column.

Invariants:
- The watermark is the largest ``updated_at`` seen in the rows themselves (never this process's clock),
  so only the writers' clocks matter. Each pass re-reads an ``overlap`` window before the watermark:
  a row committed late (long transaction) or by a writer with a slightly slow clock is still seen.
  Re-reading is harmless because consumers are idempotent (an unchanged row causes no write).
- The overlap settles: once the watermark has stood still for ``overlap`` of the reader's own clock
  (measured between its passes, so no clock is compared with another), the window closes and a pass
  reads only rows newer than the watermark. A row stamped at or below the watermark that commits later
  than that belongs to a transaction that ran longer than ``overlap``: the window never promised to see
  it while writes went on either (the watermark moves past it), and the full resync does. Without this,
  an idle federation re-read (and its consumers re-handled) the same last ``overlap`` of rows every tick.
- The first pass, and one every ``resync_seconds`` of the injected clock, reads everything: the
  level-triggered safety net for what a watermark cannot see (a row deleted by hand, a clock far off).
- ``commit`` is called only after the consumer's transactions succeeded; a failed pass leaves the
  watermark where it was, so the next pass sees the same rows again.
- ``bound`` is ``since`` without its side effects: what a pass would read now (the runner's idle probes
  ask it from another thread between passes).
- Deleted rows never show up here: consumers learn about deletions through a row that changed with them
  (a Work is tombstoned before it is removed) or through the full resync.
- A row re-read inside the window is news only if it was written since a committed pass handed it out:
  ``take`` gets each row's identity and resourceVersion (which every write moves, even when the writers'
  clocks stand still) and drops the rows an earlier committed pass delivered at the same version, and the
  rows the consumer wrote itself (``own``). Without this, every pass of the window re-did the work of the
  previous ones (binding status re-aggregated every binding written in the last ``overlap``; a restart
  repeated its full pass' work for the last burst of writes until the window settled). What is remembered
  is bounded by the window: a row stamped at or before ``watermark - overlap`` is never read again before
  the next full pass, which forgets everything and hands out every row.
- ``checkpoint`` / ``resume`` carry the watermark, when it moved and the last full pass across processes
  (``feed_checkpoint``): a resumed feed reads from the watermark (its window again until it settles) and
  runs its next full pass on the old schedule. What was handed out is not carried: the window re-hands it,
  which idempotent consumers absorb.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

T = TypeVar("T")
# (what the consumer works on, the row's updated_at, the row's identity, its resourceVersion)
FeedRow = tuple[T, datetime, Hashable, int]

DEFAULT_OVERLAP = timedelta(seconds=5)
DEFAULT_RESYNC_SECONDS = 600.0


@dataclass
class ChangeFeed:
    overlap: timedelta = DEFAULT_OVERLAP
    resync_seconds: float = DEFAULT_RESYNC_SECONDS
    _watermark: datetime | None = field(default=None, init=False)
    # The reader's clock when the watermark last moved (or a full pass ran): the window settles after it.
    _moved_at: datetime | None = field(default=None, init=False)
    _last_full: datetime | None = field(default=None, init=False)
    _pending_full: bool = field(default=False, init=False)
    _pending_mark: datetime | None = field(default=None, init=False)
    # Row identity → (updated_at, resourceVersion) handed out (or written by the consumer) by committed
    # passes, for the rows the window can still re-read; and this pass's, until ``commit``.
    _delivered: dict[Hashable, tuple[datetime, int]] = field(default_factory=dict, init=False)
    _pending_rows: dict[Hashable, tuple[datetime, int]] = field(default_factory=dict, init=False)
    _largest: int = field(default=0, init=False)  # the most rows ``_delivered`` held since it was built

    def since(self, now: datetime) -> datetime | None:
        """Lower bound (exclusive) of ``updated_at`` to read this pass; None means every row."""
        self._pending_full = self.full_due(now)
        self._pending_mark = None  # a pass that failed before ``commit`` left nothing behind
        self._pending_rows = {}
        if self._pending_full:
            self._forget_delivered()  # the safety net hands out every row, whatever was handled before
        return self.bound(now)

    def bound(self, now: datetime) -> datetime | None:
        """What ``since(now)`` returns, without starting a pass."""
        if self.full_due(now) or self._watermark is None:
            return None
        settled = self._moved_at is not None and now - self._moved_at >= self.overlap
        return self._watermark if settled else self._watermark - self.overlap

    def full_due(self, now: datetime) -> bool:
        return self._last_full is None or (now - self._last_full).total_seconds() >= self.resync_seconds

    def saw(self, stamps: Iterable[datetime]) -> None:
        """Note the ``updated_at`` of the rows read this pass (kept until ``commit``)."""
        for stamp in stamps:
            if self._pending_mark is None or stamp > self._pending_mark:
                self._pending_mark = stamp

    def take(self, rows: Iterable[FeedRow[T]]) -> list[tuple[T, datetime]]:
        """``saw`` for rows that carry their identity and resourceVersion: (target, updated_at) of those no
        committed pass handed out at that version already (the others are not news)."""
        fresh: list[tuple[T, datetime]] = []
        stamps: list[datetime] = []
        delivered, pending = self._delivered, self._pending_rows
        for target, stamp, key, version in rows:
            stamps.append(stamp)
            pending[key] = (stamp, version)
            if key not in delivered or delivered[key][1] != version:
                fresh.append((target, stamp))
        self.saw(stamps)
        return fresh

    def own(self, rows: Iterable[tuple[Hashable, datetime, int]]) -> None:
        """(identity, updated_at, resourceVersion) of rows the consumer itself wrote this pass: what it wrote
        is what it wants, so a later pass does not hand them out again unless someone writes them since."""
        for key, stamp, version in rows:
            self._pending_rows[key] = (stamp, version)

    def commit(self, now: datetime) -> None:
        """The pass succeeded: move the watermark past the rows it read."""
        if self._pending_mark is not None and (
            self._watermark is None or self._pending_mark > self._watermark
        ):
            self._watermark = self._pending_mark
            self._moved_at = now
        if self._pending_full:
            self._last_full = now
            self._moved_at = now  # what a full read saw gets its overlap again
        self._pending_mark = None
        self._pending_full = False
        self._delivered.update(self._pending_rows)
        self._largest = max(self._largest, len(self._delivered))
        self._pending_rows = {}
        self._forget_unreadable()

    @property
    def remembered(self) -> int:
        """How many rows the feed remembers as handed out (bounded by the window)."""
        return len(self._delivered)

    def _forget_unreadable(self) -> None:
        """Drop the rows no pass can re-read before the next full one (stamped at or before the window)."""
        if self._watermark is None:
            self._forget_delivered()
            return
        floor = self._watermark - self.overlap
        stale = [key for key, (stamp, _) in self._delivered.items() if stamp <= floor]
        for key in stale:
            del self._delivered[key]
        if len(self._delivered) * 4 < self._largest:
            # Rebuilt once it holds a quarter of its largest size: a dict never shrinks its table, and one
            # full pass hands out every row (30,000 Works: ~1.3 MB a feed, held for good once the window had
            # emptied it).
            self._delivered = dict(self._delivered.items())  # inserted one by one: a table of its own size
            self._largest = len(self._delivered)

    def _forget_delivered(self) -> None:
        self._delivered = {}
        self._largest = 0

    def checkpoint(self) -> dict[str, str | None] | None:
        """What ``resume`` needs, once a full pass committed (before that a successor could skip nothing).
        A feed that has seen no row yet has no watermark: resumed, it reads every row (there are none)."""
        if self._last_full is None:
            return None
        return {
            "watermark": _iso(self._watermark),
            "moved_at": _iso(self._moved_at),
            "last_full": _iso(self._last_full),
        }

    def resume(self, state: Mapping[str, str | None]) -> None:
        """Continue from another process's ``checkpoint`` (KeyError, TypeError or ValueError on a malformed
        one, and the feed unchanged)."""
        watermark, moved_at, last_full = (_parse(state[k]) for k in ("watermark", "moved_at", "last_full"))
        if last_full is None:
            raise ValueError("a checkpoint without its last full pass")
        self._watermark, self._moved_at, self._last_full = watermark, moved_at, last_full
        self._forget_delivered()

    def reset(self) -> None:
        """Forget everything: the next pass reads every row (e.g. after losing and regaining leadership)."""
        self._watermark = None
        self._moved_at = None
        self._last_full = None
        self._forget_delivered()


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def _parse(text: str | None) -> datetime | None:
    if text is None:
        return None
    at = datetime.fromisoformat(text)
    if at.tzinfo is None:
        raise ValueError(f"a checkpoint time without its zone: {text!r}")
    return at
