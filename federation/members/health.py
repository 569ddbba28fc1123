"""Cluster Ready condition: what a probe observed, and Karmada's threshold debouncing of it. No I/O.

Semantics (karmada ``cluster_status_controller.go`` / ``cluster_condition_cache.go``):
- Observed: not reachable → ``False``/``ClusterNotReachable``; reachable but not 200 → ``False``/
  ``ClusterNotReady``; 200 → ``True``/``ClusterReady``. A client that cannot be built → ``False``/
  ``StatusCollectionFailed``.
- Debounce: with no cache entry (just joined) or no published Ready condition, publish the observation.
  When the observed status differs from the cached one, the cache restarts its threshold timer at ``now``.
  A True→not-True change is published only once ``failure_threshold`` has elapsed since the timer start,
  a not-True→True change once ``success_threshold`` has; until then the published condition stays.
  False↔Unknown is not debounced.
- Time is passed in (``now``, seconds on any monotonic-enough clock); nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REASON_READY = "ClusterReady"
REASON_NOT_READY = "ClusterNotReady"
REASON_NOT_REACHABLE = "ClusterNotReachable"
REASON_COLLECTION_FAILED = "StatusCollectionFailed"
MESSAGE_READY = "cluster is healthy and ready to accept workloads"
MESSAGE_NOT_READY = "cluster is reachable but health endpoint responded without ok"
MESSAGE_NOT_REACHABLE = "cluster is not reachable"
DEFAULT_FAILURE_THRESHOLD = 30.0
DEFAULT_SUCCESS_THRESHOLD = 30.0


@dataclass(frozen=True, slots=True)
class ReadyCondition:
    """The ``Ready`` condition of a Cluster (status ``True``/``False``/``Unknown``)."""

    status: str
    reason: str
    message: str

    def to_dict(self, last_transition_time: str) -> dict[str, Any]:
        return {
            "type": "Ready",
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": last_transition_time,
        }

    @classmethod
    def from_dict(cls, condition: dict[str, Any]) -> ReadyCondition:
        return cls(
            str(condition.get("status", "Unknown")),
            str(condition.get("reason", "")),
            str(condition.get("message", "")),
        )


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """What the debouncer remembers per cluster: the last observed status and when it started."""

    observed_status: str
    threshold_start: float


def observed_ready(online: bool, healthy: bool, cause: str | None = None) -> ReadyCondition:
    """Karmada's ``generateReadyCondition`` for one probe; ``cause`` (the probe's error) ends the message,
    so an operator reads *why* (certificate, refused, timeout) in the Ready condition itself."""
    if not online:
        return ReadyCondition("False", REASON_NOT_REACHABLE, _with_cause(MESSAGE_NOT_REACHABLE, cause))
    if not healthy:
        return ReadyCondition("False", REASON_NOT_READY, _with_cause(MESSAGE_NOT_READY, cause))
    return ReadyCondition("True", REASON_READY, MESSAGE_READY)


def _with_cause(message: str, cause: str | None) -> str:
    return f"{message}: {cause}" if cause else message


def collection_failed(reason: str) -> ReadyCondition:
    return ReadyCondition("False", REASON_COLLECTION_FAILED, reason)


def threshold_adjusted(
    cached: CacheEntry | None,
    published: ReadyCondition | None,
    observed: ReadyCondition,
    now: float,
    failure_threshold: float = DEFAULT_FAILURE_THRESHOLD,
    success_threshold: float = DEFAULT_SUCCESS_THRESHOLD,
) -> tuple[ReadyCondition, CacheEntry]:
    """(condition to publish, new cache entry) for one observation."""
    if cached is None:
        return observed, CacheEntry(observed.status, now)
    if published is None:
        return observed, cached
    entry = cached
    if cached.observed_status != observed.status:
        entry = CacheEntry(observed.status, now)
    threshold = success_threshold if observed.status == "True" else failure_threshold
    flips = (observed.status == "True") != (published.status == "True")
    if flips and now < entry.threshold_start + threshold:
        return published, entry
    return observed, entry


class ReadyDebouncer:
    """Per-cluster cache around ``threshold_adjusted``, for a controller that probes many clusters."""

    def __init__(
        self,
        failure_threshold: float = DEFAULT_FAILURE_THRESHOLD,
        success_threshold: float = DEFAULT_SUCCESS_THRESHOLD,
    ) -> None:
        self.failure_threshold = failure_threshold
        self.success_threshold = success_threshold
        self._entries: dict[str, CacheEntry] = {}

    def adjust(
        self, cluster: str, published: ReadyCondition | None, observed: ReadyCondition, now: float
    ) -> ReadyCondition:
        condition, entry = threshold_adjusted(
            self._entries.get(cluster),
            published,
            observed,
            now,
            self.failure_threshold,
            self.success_threshold,
        )
        self._entries[cluster] = entry
        return condition

    def forget(self, cluster: str) -> None:
        self._entries.pop(cluster, None)
