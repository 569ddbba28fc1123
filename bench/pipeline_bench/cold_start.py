"""The cold start's clock: samples taken after the servers restart, and when they count as ready and idle
again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .metering import Sample, between

QUIET_SECONDS = 3.0


@dataclass
class ColdStart:
    """Samples after a restart. Idle once every replica is ready, the frequent controllers have each run,
    and then for ``QUIET_SECONDS`` the members got no write and the servers stayed at the idle level:
    CPU (percent of one core) and rows written per second within the limits."""

    start: float
    cpu_limit: float
    rows_limit: float
    frequent: set[str]
    history: list[Sample] = field(default_factory=list)
    ready_at: float | None = None
    controllers_at: float | None = None
    quiet_from: float | None = None

    def add(self, sample: Sample, ready: bool) -> None:
        if ready and self.ready_at is None:
            self.ready_at = sample.at
        if self.controllers_at is None and all(
            sample.controllers.get(n, {}).get("runs") for n in self.frequent
        ):
            self.controllers_at = sample.at
        self.history.append(sample)
        self.quiet_from = self._quiet_since()

    def _quiet_since(self) -> float | None:
        if self.ready_at is None or self.controllers_at is None or len(self.history) < 2:
            return None
        last = self.history[-1]
        first = next(s for s in self.history if s.at >= last.at - QUIET_SECONDS)
        begins = max(self.ready_at, self.controllers_at)
        if first is last or first.at < begins or last.at - first.at < QUIET_SECONDS * 0.9:
            return None
        window = between(first, last)
        cpu_percent = 100 * window["cpu_s"] / window["seconds"]
        rows = window["db"].rows_written / window["seconds"]
        if window["member_writes"] or cpu_percent > self.cpu_limit or rows > self.rows_limit:
            return None
        return first.at

    def since_start(self, at: float | None) -> float | None:
        return None if at is None else round(at - self.start, 2)

    def timeline(self) -> list[list[float]]:
        """Per second after the start: [second, server CPU % of a core, statements, rows written,
        member calls, the members' CPU % of a core] in that second."""
        rows: list[list[float]] = []
        previous = self.history[0]
        for sample in self.history[1:]:
            if sample.at - previous.at >= 1.0 or sample is self.history[-1]:
                window = between(previous, sample)
                rows.append(
                    [
                        round(sample.at - self.start, 1),
                        round(100 * window["cpu_s"] / window["seconds"], 1),
                        window["statements"],
                        window["db"].rows_written,
                        window["member_calls"],
                        round(100 * window["members_cpu_s"] / window["seconds"], 1),
                    ]
                )
                previous = sample
        return rows

    def result(self, stopped: list[float | None], rss: list[tuple[float, float | None]]) -> dict[str, Any]:
        """``rss``: per replica, VmRSS of the serve process and of its children (None: none)."""
        total = between(self.history[0], self.history[-1]) if len(self.history) > 1 else None
        return {
            "stop_seconds": stopped,
            "seconds": self.since_start(self.quiet_from),
            "ready_seconds": self.since_start(self.ready_at),
            "controllers_ran_seconds": self.since_start(self.controllers_at),
            "cpu_limit_percent": round(self.cpu_limit, 1),
            "rows_written_limit_per_s": round(self.rows_limit, 1),
            "rss_mb": [round(own + (children or 0.0), 1) for own, children in rss],
            "rss_mb_by_process": rss_pairs(rss),
            "window": total,
            "timeline": self.timeline(),
        }


def rss_pairs(rss: list[tuple[float, float | None]]) -> list[list[float | None]]:
    """Per replica: [the serve process's VmRSS, its children's (None: none)], MB, rounded."""
    return [[round(own, 1), None if children is None else round(children, 1)] for own, children in rss]
