"""A token bucket on the injected clock: how many evictions may happen now.

Invariants: a rate of 0 is unlimited unless ``paused``; the bucket holds at most one second's worth of
tokens (at least one), so a quiet period never licenses a burst larger than the rate; time comes from the
caller (tests move a fake clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass
class TokenBucket:
    rate: float
    paused: bool = False
    _tokens: float = 1.0
    _last: datetime | None = None

    def set_rate(self, rate: float, *, paused: bool = False) -> None:
        self.rate, self.paused = rate, paused

    def take(self, now: datetime) -> bool:
        """Spend one token if there is one (always True when unlimited, never while paused)."""
        if self.paused:
            return False
        if self.rate <= 0:
            return True
        if self._last is not None:
            elapsed = max((now - self._last).total_seconds(), 0.0)
            self._tokens = min(max(self.rate, 1.0), self._tokens + elapsed * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False
