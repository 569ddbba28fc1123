"""Progress of the timed part, read from the benchmark database: when the bindings, their placements,
the Works, the Works applied and the bindings FullyApplied first reached their goals."""

from __future__ import annotations

import threading
import time

import psycopg

PROGRESS = """
SELECT
  (SELECT count(*) FROM resource_bindings),
  (SELECT count(*) FROM resource_bindings b WHERE NOT b.needs_scheduling
     AND EXISTS (SELECT 1 FROM binding_target_clusters t WHERE t.binding_id = b.id)),
  (SELECT count(*) FROM works WHERE binding_id IS NOT NULL),
  (SELECT count(*) FROM works WHERE binding_id IS NOT NULL AND applied),
  (SELECT count(*) FROM resource_bindings
     WHERE status -> 'conditions' @> '[{"type": "FullyApplied", "status": "True"}]')
"""
MILESTONES = ("bindings", "scheduled", "works", "applied", "fully_applied")


class Progress:
    """Polls the benchmark database and remembers when each count first reached its goal."""

    def __init__(self, url: str, goals: dict[str, int], t0: float, interval: float) -> None:
        self.url, self.goals, self.t0, self.interval = url, goals, t0, interval
        self.reached: dict[str, float] = {}
        self.latest: dict[str, int] = dict.fromkeys(MILESTONES, 0)
        self.polls = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def done(self) -> bool:
        return all(name in self.reached for name in self.goals)

    def _loop(self) -> None:
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                while not self._stop.is_set():
                    row = conn.execute(PROGRESS).fetchone()
                    self.polls += 1
                    now = time.perf_counter() - self.t0
                    assert row is not None
                    self.latest = dict(zip(MILESTONES, (int(v) for v in row), strict=True))
                    for name, goal in self.goals.items():
                        if name not in self.reached and self.latest[name] >= goal:
                            self.reached[name] = now
                    if self.done():
                        return
                    self._stop.wait(self.interval)
        except BaseException as exc:  # reported by the waiter, not lost in a thread
            self.error = exc
