"""Progress of the timed part, read from the benchmark database: when the bindings, their placements,
the Works, the Works applied and the bindings FullyApplied first reached their goals."""

from __future__ import annotations

import threading
import time

import psycopg

# One count per milestone. A count is asked for only until its milestone is reached, and FullyApplied (a
# JSON containment test over every binding's status: ~0.7 s a poll at 10,000 bindings) only once every Work
# is applied, as it cannot be reached before: the poll must not take the machine's CPU from the run it times.
COUNTS = {
    "bindings": "SELECT count(*) FROM resource_bindings",
    "scheduled": """SELECT count(*) FROM resource_bindings b WHERE NOT b.needs_scheduling
     AND EXISTS (SELECT 1 FROM binding_target_clusters t WHERE t.binding_id = b.id)""",
    "works": "SELECT count(*) FROM works WHERE binding_id IS NOT NULL",
    "applied": "SELECT count(*) FROM works WHERE binding_id IS NOT NULL AND applied",
    "fully_applied": """SELECT count(*) FROM resource_bindings
     WHERE status -> 'conditions' @> '[{"type": "FullyApplied", "status": "True"}]'""",
}
MILESTONES = tuple(COUNTS)
# Not asked for until the milestone named has been reached.
AFTER = {"fully_applied": "applied"}


class Progress:
    """Polls the benchmark database and remembers when each count first reached its goal."""

    def __init__(self, url: str, goals: dict[str, int], t0: float, interval: float) -> None:
        self.url, self.goals, self.t0, self.interval = url, goals, t0, interval
        self.reached: dict[str, float] = {}
        # None: not asked for yet (``AFTER``)
        self.latest: dict[str, int | None] = dict.fromkeys(MILESTONES, None)
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

    def _asked(self) -> list[str]:
        """The counts this poll asks for: those not reached yet whose prerequisite (``AFTER``) is."""
        return [
            name
            for name in MILESTONES
            if name not in self.reached
            and (AFTER.get(name) is None or AFTER[name] in self.reached or AFTER[name] not in self.goals)
        ]

    def _loop(self) -> None:
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                while not self._stop.is_set():
                    asked = self._asked()
                    if asked:
                        row = conn.execute(f"SELECT {', '.join(f'({COUNTS[n]})' for n in asked)}").fetchone()
                        assert row is not None
                        self.latest.update(zip(asked, (int(v) for v in row), strict=True))
                    self.polls += 1
                    now = time.perf_counter() - self.t0
                    for name, goal in self.goals.items():
                        count = self.latest[name]
                        if name not in self.reached and count is not None and count >= goal:
                            self.reached[name] = now
                    if self.done():
                        return
                    self._stop.wait(self.interval)
        except BaseException as exc:  # reported by the waiter, not lost in a thread
            self.error = exc
