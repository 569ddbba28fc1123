"""Application failover, pure: how long a workload has been unhealthy on a cluster, and the retry budget of
the error-rescheduling design (kse-rescheduler) with a workload's share on a member cluster as the pod and
the cluster as the node.

The unhealthy clock (one ``HealthRecord`` per binding and target cluster):
- Unhealthy time accumulates across Unhealthy↔Unknown flapping: Unknown pauses the clock, it does not
  reset it. Healthy resets it. A cluster is over its toleration when it is Unhealthy now and its
  accumulated time reaches ``tolerationSeconds`` (Karmada's default 300).
- The healthy run that preceded a failure is kept (``healthy_seconds_before_failure``): Unknown pauses
  a healthy run as well, and a run that resumes after Unknown without a failure in between goes on.

The budget, kept in the workload template's annotations (a bare Pod is its own template):
- ``failover.federation.io/max-reschedules`` (set by the user; else the policy's
  ``spec.failover.application.maxReschedules``; neither: no limit), ``.../reschedule-count`` and
  ``.../tried-clusters`` (both maintained by the controller). An unreadable annotation is ignored and
  said so (``Budget.problems``), never fatal.
- ``tried-clusters`` is a JSON list; for a StatefulSet (whose shares are not interchangeable) a JSON map
  from the cluster a share started on to that share's list. The first map written names every share
  of the placement then (empty lists), so a cluster that is no key later is where a moved share landed.
- Before an eviction: if the workload ran Healthy on the failing cluster longer than ``resetAfterSeconds``
  before it failed, the budget restarts (count 0, that share's list emptied): the failure says more
  about a changed environment than about the cluster. Then a count at the limit refuses the eviction;
  otherwise the count goes up by one and the cluster joins the share's tried list.
- The scheduler avoids every tried cluster (``avoid_of``); when it had to ignore them to place the
  workload at all, every list is emptied (``Tried.cleared``) while the count stays, so the budget still
  bounds the moves.
- DaemonSets are exempt: they run everywhere by definition.

No I/O and no clock: ``now`` is an argument.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

MAX_RESCHEDULES_ANNOTATION = "failover.federation.io/max-reschedules"
RESCHEDULE_COUNT_ANNOTATION = "failover.federation.io/reschedule-count"
TRIED_CLUSTERS_ANNOTATION = "failover.federation.io/tried-clusters"
EXEMPT_KINDS = frozenset({"DaemonSet"})
PER_SHARE_KINDS = frozenset({"StatefulSet"})

HEALTHY, UNHEALTHY, UNKNOWN = "Healthy", "Unhealthy", "Unknown"


def exempt(kind: str) -> bool:
    """Whether a workload of this kind never takes part in application failover."""
    return kind in EXEMPT_KINDS


# -- the unhealthy clock ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HealthRecord:
    """What the controller knows of one workload share's health on one cluster (``workload_health``).

    ``observed_at`` is when the health last changed; ``unhealthy_seconds`` the time accumulated before
    the current Unhealthy streak (``unhealthy_since``); ``healthy_seconds_before_failure`` the length of
    the healthy run that preceded the latest failure (or, while Unknown after Healthy, of the paused run).
    """

    health: str
    observed_at: datetime
    unhealthy_since: datetime | None = None
    unhealthy_seconds: float = 0.0
    healthy_since: datetime | None = None
    healthy_seconds_before_failure: float = 0.0

    def unhealthy_for(self, now: datetime) -> float:
        """Accumulated unhealthy seconds, the current streak included."""
        running = 0.0 if self.unhealthy_since is None else (now - self.unhealthy_since).total_seconds()
        return self.unhealthy_seconds + max(running, 0.0)

    def over_toleration(self, toleration_seconds: float, now: datetime) -> bool:
        return self.health == UNHEALTHY and self.unhealthy_for(now) >= toleration_seconds

    def toleration_ends(self, toleration_seconds: float, now: datetime) -> datetime | None:
        """When an Unhealthy streak reaches the toleration (None while not Unhealthy: nothing runs)."""
        if self.health != UNHEALTHY:
            return None
        return now + timedelta(seconds=max(toleration_seconds - self.unhealthy_for(now), 0.0))


def normalize(health: Any) -> str:
    return health if health in (HEALTHY, UNHEALTHY) else UNKNOWN


def observe(previous: HealthRecord | None, health: Any, now: datetime) -> HealthRecord:
    """The record after seeing ``health`` now (the same object when nothing changed)."""
    seen = normalize(health)
    if previous is None:
        return _first(seen, now)
    if previous.health == seen:
        return previous
    if seen == HEALTHY:
        return _to_healthy(previous, now)
    if seen == UNHEALTHY:
        return _to_unhealthy(previous, now)
    return _to_unknown(previous, now)


def _first(health: str, now: datetime) -> HealthRecord:
    if health == HEALTHY:
        return HealthRecord(HEALTHY, now, healthy_since=now)
    if health == UNHEALTHY:
        return HealthRecord(UNHEALTHY, now, unhealthy_since=now)
    return HealthRecord(UNKNOWN, now)


def _to_healthy(previous: HealthRecord, now: datetime) -> HealthRecord:
    # A run paused by Unknown with no failure in between goes on; after a failure a new run starts.
    paused = previous.health == UNKNOWN and previous.unhealthy_seconds == 0
    resumed = previous.healthy_seconds_before_failure if paused else 0.0
    return HealthRecord(
        HEALTHY,
        now,
        healthy_since=now - timedelta(seconds=resumed),
        healthy_seconds_before_failure=previous.healthy_seconds_before_failure,
    )


def _to_unhealthy(previous: HealthRecord, now: datetime) -> HealthRecord:
    return replace(
        previous,
        health=UNHEALTHY,
        observed_at=now,
        unhealthy_since=now,
        healthy_since=None,
        healthy_seconds_before_failure=_run_so_far(previous, now),
    )


def _to_unknown(previous: HealthRecord, now: datetime) -> HealthRecord:
    return replace(
        previous,
        health=UNKNOWN,
        observed_at=now,
        unhealthy_since=None,
        unhealthy_seconds=previous.unhealthy_for(now),
        healthy_since=None,
        healthy_seconds_before_failure=_run_so_far(previous, now),
    )


def _run_so_far(previous: HealthRecord, now: datetime) -> float:
    if previous.health != HEALTHY or previous.healthy_since is None:
        return previous.healthy_seconds_before_failure
    return max((now - previous.healthy_since).total_seconds(), 0.0)


# -- the tried clusters -----------------------------------------------------------------------------------

PLAIN = ""  # the one share of a workload whose shares are interchangeable


@dataclass(frozen=True, slots=True)
class Tried:
    """The clusters a workload failed on: one list (``PLAIN``), or one per share keyed by the cluster the
    share started on (``per_share``). ``shares`` maps share → its clusters, oldest first."""

    per_share: bool = False
    shares: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def clusters(self) -> tuple[str, ...]:
        """Every tried cluster once, share by share (by name), each share's in the order tried: the
        scheduler's avoid list."""
        seen: dict[str, None] = {}
        for share in sorted(self.shares):
            seen.update(dict.fromkeys(self.shares[share]))
        return tuple(seen)

    def of(self, share: str) -> tuple[str, ...]:
        return self.shares.get(share, ())

    def share_of(self, cluster: str) -> str:
        """The share running on ``cluster``: its own when it started there; else the moved share that
        landed there (when several moved and none failed since, the first by name: the annotation does
        not say which went where); else a share new since the map was written (it starts there)."""
        if not self.per_share:
            return PLAIN
        if cluster in self.shares:
            return cluster
        moved = sorted(s for s, clusters in self.shares.items() if clusters)
        holding = [s for s in moved if cluster in self.shares[s]]
        return (holding or moved or [cluster])[0]

    def with_shares(self, targets: Iterable[str]) -> Tried:
        """The first map names every share of the current placement (no-op once written, or for lists)."""
        if not self.per_share or self.shares:
            return self
        return replace(self, shares={name: () for name in targets})

    def add(self, share: str, cluster: str) -> Tried:
        current = self.of(share)
        added = current if cluster in current else (*current, cluster)
        return replace(self, shares={**self.shares, share: added})

    def emptied(self, share: str) -> Tried:
        if share not in self.shares:
            return self
        return replace(self, shares={**self.shares, share: ()})

    def cleared(self) -> Tried:
        """Every list emptied; a StatefulSet keeps its share keys (they say where each share started)."""
        if not self.per_share:
            return replace(self, shares={})
        return replace(self, shares={share: () for share in self.shares})

    def encode(self) -> str | None:
        """The annotation value; None when there is nothing to say (remove the annotation)."""
        if self.per_share:
            if not self.shares:
                return None
            return _dumps({share: list(clusters) for share, clusters in sorted(self.shares.items())})
        clusters = self.of(PLAIN)
        return _dumps(list(clusters)) if clusters else None


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def parse_tried(raw: Any, per_share: bool) -> tuple[Tried, str | None]:
    """The tried clusters from the annotation value, and what was wrong with it (then: empty)."""
    empty = Tried(per_share)
    if raw is None or raw == "":
        return empty, None
    try:
        value = json.loads(str(raw))
    except ValueError:
        return empty, f"{TRIED_CLUSTERS_ANNOTATION}: not JSON; ignored"
    if per_share and _is_share_map(value):
        return Tried(True, {str(k): tuple(dict.fromkeys(v)) for k, v in value.items()}), None
    if not per_share and _is_names(value):
        return Tried(False, {PLAIN: tuple(dict.fromkeys(value))} if value else {}), None
    shape = "a JSON map of cluster → list of cluster names" if per_share else "a JSON list of cluster names"
    return empty, f"{TRIED_CLUSTERS_ANNOTATION}: expected {shape}; ignored"


def _is_names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _is_share_map(value: Any) -> bool:
    return isinstance(value, dict) and all(_is_names(v) for v in value.values())


def tried_of(template: Mapping[str, Any]) -> tuple[Tried, str | None]:
    """A template's tried clusters (a map for the kinds whose shares are not interchangeable)."""
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    per_share = str(template.get("kind") or "") in PER_SHARE_KINDS
    return parse_tried(annotations.get(TRIED_CLUSTERS_ANNOTATION), per_share)


def avoid_of(template: Mapping[str, Any] | None) -> frozenset[str]:
    """The clusters the scheduler avoids for a workload: every cluster any of its shares failed on."""
    if template is None:
        return frozenset()
    return frozenset(tried_of(template)[0].clusters())


# -- the budget -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Budget:
    """``limit`` None: no limit. ``problems``: annotations that could not be read (ignored)."""

    limit: int | None
    count: int
    tried: Tried
    problems: tuple[str, ...] = ()

    @property
    def spent(self) -> bool:
        return self.limit is not None and self.count >= self.limit

    def annotations(self) -> dict[str, str | None]:
        """What the controller writes onto the template (None: remove the annotation)."""
        return {RESCHEDULE_COUNT_ANNOTATION: str(self.count), TRIED_CLUSTERS_ANNOTATION: self.tried.encode()}


def read_budget(template: Mapping[str, Any], behavior: Mapping[str, Any] | None) -> Budget:
    """The budget of a workload: its template's annotations, the policy's ``maxReschedules`` as default."""
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    problems: list[str] = []
    limit = _count(annotations.get(MAX_RESCHEDULES_ANNOTATION), MAX_RESCHEDULES_ANNOTATION, problems)
    if limit is None:
        default = (behavior or {}).get("maxReschedules")
        limit = (
            default if isinstance(default, int) and not isinstance(default, bool) and default >= 0 else None
        )
    count = _count(annotations.get(RESCHEDULE_COUNT_ANNOTATION), RESCHEDULE_COUNT_ANNOTATION, problems)
    tried, problem = tried_of(template)
    problems.extend([problem] if problem else [])
    return Budget(limit, count or 0, tried, tuple(problems))


def _count(raw: Any, name: str, problems: list[str]) -> int | None:
    if raw is None or raw == "":
        return None
    text = str(raw).strip()
    if text.isascii() and text.isdigit():
        return int(text)
    problems.append(f"{name}: {raw!r} is not a non-negative integer; ignored")
    return None


@dataclass(frozen=True, slots=True)
class Charge:
    """The budget's answer to one failure: ``allowed`` (then ``after`` is the budget to write) or spent."""

    cluster: str
    share: str
    allowed: bool
    before: Budget
    after: Budget
    reset: bool  # the healthy-run rule restarted the budget first
    healthy_run_seconds: float  # how long the workload ran Healthy on the cluster before it failed

    def message(self) -> str:
        tried = ", ".join(self.after.tried.clusters()) or "none"
        limit = "no limit" if self.after.limit is None else f"at most {self.after.limit}"
        share = f" (share started on {self.share})" if self.share else ""
        if self.allowed:
            return f"Reschedule {self.after.count} ({limit}) away from {self.cluster}{share}; tried: {tried}"
        return (
            f"Failover budget spent: {self.after.count} reschedule(s) of {limit} used; "
            f"tried: {tried}. The workload stays on {self.cluster}{share}"
        )


def charge(
    budget: Budget,
    cluster: str,
    targets: Sequence[str],
    record: HealthRecord,
    reset_after_seconds: float,
) -> Charge:
    """Decide one application eviction from ``cluster`` against the budget (module invariants)."""
    tried = budget.tried.with_shares(targets)
    share = tried.share_of(cluster)
    start = replace(budget, tried=tried)
    reset = record.healthy_seconds_before_failure > reset_after_seconds and bool(
        start.count or tried.of(share)
    )
    if reset:
        start = replace(start, count=0, tried=tried.emptied(share))
    run = record.healthy_seconds_before_failure
    if start.spent:
        return Charge(cluster, share, False, budget, start, reset, run)
    after = replace(start, count=start.count + 1, tried=start.tried.add(share, cluster))
    return Charge(cluster, share, True, budget, after, reset, run)
