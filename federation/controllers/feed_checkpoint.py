"""A change-feed controller's checkpoint in the database: a restarted process, or a new leader, resumes
where the last committed pass left the controller's feeds instead of a full pass over every row.

Invariants:
- Loaded once per controller object, by its first pass. Nothing usable stored (none yet, another
  federation version's, a malformed one) leaves the feeds as they are: that first pass is a full one, as
  before checkpoints existed.
- Saved after a pass whose feeds committed, in a transaction of its own (fenced like every controller
  write), and only when it differs from what this object last saved or loaded: a pass that moved nothing
  writes nothing. A crash before the save leaves the older checkpoint, from which the next pass re-reads
  more than it needs to (consumers are idempotent), never less.
- The full resync keeps its schedule across restarts (its time is in the checkpoint), so the safety net
  for what a watermark cannot see still runs every ``resync_seconds``.
- The ids the controller still has to revisit (blocked, backing off after a failure: memory a full pass
  used to rebuild) are in the checkpoint and handed to the first pass after a resume.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from federation.controllers.change_feed import ChangeFeed
from federation.store import checkpoints
from federation.store.db import UnitOfWork

log = logging.getLogger(__name__)


@dataclass
class FeedCheckpoint:
    name: str
    # The resumed ids to revisit that no committed pass has handled yet (``save`` empties it).
    revisit: set[int] = field(default_factory=set, init=False)
    _loaded: bool = field(default=False, init=False)
    _last: dict[str, Any] | None = field(default=None, init=False)

    def resume(self, uow: UnitOfWork, feeds: Mapping[str, ChangeFeed]) -> set[int]:
        """On the first call: restore ``feeds`` from the stored checkpoint; the ids to revisit. Later calls
        (and a first call with nothing to resume) change nothing and return no id."""
        if self._loaded:
            return set()
        with uow() as session:
            state = checkpoints.load(session, self.name)
        self._loaded = True
        if state is None:
            return set()
        try:
            stored = state["feeds"]
            for key, feed in feeds.items():
                feed.resume(stored[key])
            revisit = {int(i) for i in state.get("revisit", [])}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s: checkpoint not resumed (%r); this pass reads every row", self.name, exc)
            for feed in feeds.values():
                feed.reset()
            return set()
        self._last = state
        self.revisit |= revisit
        log.info("%s: resumed from its checkpoint, %d id(s) to revisit", self.name, len(revisit))
        return revisit

    def save(
        self, uow: UnitOfWork, feeds: Mapping[str, ChangeFeed], revisit: Iterable[int], now: datetime
    ) -> bool:
        """Store where ``feeds`` stand after a committed pass, if that changed; True if it wrote. The pass
        handled the resumed ids (``revisit``)."""
        self.revisit.clear()
        marks = {key: feed.checkpoint() for key, feed in feeds.items()}
        if any(mark is None for mark in marks.values()):
            return False
        state: dict[str, Any] = {"feeds": marks, "revisit": sorted(set(revisit))}
        if state == self._last:
            return False
        with uow() as session:
            checkpoints.save(session, self.name, state, now)
        self._last = state
        return True
