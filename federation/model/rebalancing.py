"""What a WorkloadRebalancer's status becomes (semantics §7, with issue 9's corrections): pure rules the
controller applies. No I/O, no clock: times are passed in.

Invariants:
- ``sync_workloads`` is Karmada's ``syncWorkloadsFromSpecToStatus``: a workload in spec and status keeps its
  entry; one removed from spec keeps its entry only if it was Successful; a new one gets a pending entry; a
  modified entry is a removal plus an addition; entries sort by ``"apiVersion kind namespace name"``.
- Every entry carries the trigger time it stands for. The first workloads get the rebalancer's
  ``creationTimestamp`` (Karmada); a workload added later gets the time the controller first saw it, so its
  binding, scheduled after the creation, is still rescheduled (Karmada's gotcha: it reused the creation
  time and nothing happened). A rebalancer first seen at generation > 1 cannot tell which workloads were
  there at creation: all of its entries get the time seen (later than creation: still a fresh schedule).
- ``judge`` decides one pending entry from its binding and the binding's latest scheduling decision:
  no binding → Failed/ReferencedBindingNotFound; a trigger older than the entry's (or none) → write it;
  ``lastScheduledTime >= trigger`` → Successful (the placement was computed at or after the trigger);
  a failed decision for the binding's current generation, whose spec carries the trigger → Failed with the
  scheduler's reason (Unschedulable, NoClusterFit, SchedulerError); otherwise still pending.
  Times are ``metav1.Time`` (seconds), as in Karmada: a binding scheduled in the trigger's own second
  counts as rescheduled, and the scheduler (``RescheduleRequired``: strictly later) does not run again.
- ``next_status``: ``finishTime`` only once every entry has a result; it is now when the status changed,
  kept when it did not (Karmada), and absent while any entry is pending (so a TTL never runs out under a
  modification still in progress).
- ``ttl_deadline``: ``finishTime + ttlSecondsAfterFinished``; no TTL or not finished → None (kept).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from federation.model.binding import binding_name
from federation.model.rebalancer import REASON_BINDING_NOT_FOUND, RESULT_FAILED, RESULT_SUCCESSFUL

SCHEDULE_SUCCESS = "Success"


@functools.lru_cache(maxsize=1024)
def format_time(value: datetime) -> str:
    """RFC 3339 in UTC, second precision (``metav1.Time``). Cached: a pass writes one instant per entry."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """A stored ``metav1.Time``; None when absent or unreadable (a hand-written status must not stop us)."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def seconds(value: datetime) -> datetime:
    """``value`` as it reads back once stored (second precision)."""
    return value.replace(microsecond=0)


@dataclass(frozen=True, slots=True)
class Workload:
    """One ``spec.workloads`` item; equality is Karmada's (every field, empty namespace = none)."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Workload:
        return cls(
            str(raw.get("apiVersion") or ""),
            str(raw.get("kind") or ""),
            str(raw.get("name") or ""),
            str(raw.get("namespace") or ""),
        )

    def sort_key(self) -> str:
        return f"{self.api_version} {self.kind} {self.namespace} {self.name}"

    def binding_key(self) -> tuple[str, str]:
        """(namespace, name) of its binding: a ClusterResourceBinding when the namespace is empty."""
        return self.namespace, binding_name(self.name, self.kind)

    def label(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def to_dict(self) -> dict[str, str]:
        body = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            body["namespace"] = self.namespace
        return body


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``status.observedWorkloads`` item; ``result`` "" is pending."""

    workload: Workload
    triggered_at: datetime
    result: str = ""
    reason: str = ""

    @property
    def pending(self) -> bool:
        return not self.result

    @classmethod
    def of(cls, raw: Mapping[str, Any], default_trigger: datetime) -> Entry:
        return cls(
            Workload.of(raw.get("workload") or {}),
            parse_time(raw.get("rescheduleTriggeredAt")) or default_trigger,
            str(raw.get("result") or ""),
            str(raw.get("reason") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"workload": self.workload.to_dict()}
        if self.result:
            body["result"] = self.result
        if self.reason:
            body["reason"] = self.reason
        body["rescheduleTriggeredAt"] = format_time(self.triggered_at)
        return body


# -- spec → status ----------------------------------------------------------------------------------------


def trigger_for_added(rebalancer: Mapping[str, Any], now: datetime) -> datetime:
    """The trigger time of workloads new to status: the creation on the first sync of generation 1,
    else now (the time the workload was first seen)."""
    meta = rebalancer.get("metadata") or {}
    status = rebalancer.get("status") or {}
    created = parse_time(meta.get("creationTimestamp"))
    first_sync = status.get("observedGeneration") is None and not status.get("observedWorkloads")
    if first_sync and int(meta.get("generation") or 1) == 1 and created is not None:
        return created
    return seconds(now)


def observed_entries(rebalancer: Mapping[str, Any]) -> list[Entry]:
    """The stored entries; one without a trigger time (written before we kept one) stands for the creation."""
    created = parse_time((rebalancer.get("metadata") or {}).get("creationTimestamp"))
    fallback = created or datetime.min.replace(tzinfo=UTC)
    raw = (rebalancer.get("status") or {}).get("observedWorkloads") or []
    return [Entry.of(item, fallback) for item in raw if isinstance(item, Mapping)]


def spec_workloads(rebalancer: Mapping[str, Any]) -> list[Workload]:
    raw = (rebalancer.get("spec") or {}).get("workloads") or []
    return [Workload.of(item) for item in raw if isinstance(item, Mapping)]


def sync_workloads(spec: Sequence[Workload], observed: Sequence[Entry], added_at: datetime) -> list[Entry]:
    """Karmada's modification rules: the entries status holds after this spec."""
    wanted = dict.fromkeys(spec)
    entries: list[Entry] = []
    for entry in observed:
        if entry.workload in wanted:
            entries.append(entry)
            del wanted[entry.workload]
        elif entry.result == RESULT_SUCCESSFUL:
            entries.append(entry)
    entries += [Entry(workload, added_at) for workload in wanted]
    return sorted(entries, key=lambda e: e.workload.sort_key())


# -- one pending entry ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LatestDecision:
    """The scheduler's latest decision for a binding: for which generation, with what result."""

    generation: int | None
    result: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class BindingState:
    """What judging reads of a binding."""

    generation: int
    triggered_at: datetime | None
    last_scheduled: datetime | None
    decision: LatestDecision | None = None

    @classmethod
    def of(cls, binding: Mapping[str, Any], decision: LatestDecision | None) -> BindingState:
        return cls(
            int((binding.get("metadata") or {}).get("generation") or 1),
            parse_time((binding.get("spec") or {}).get("rescheduleTriggeredAt")),
            parse_time((binding.get("status") or {}).get("lastScheduledTime")),
            decision,
        )


class Action(Enum):
    NOT_FOUND = "NotFound"  # → Failed/ReferencedBindingNotFound
    TRIGGER = "Trigger"  # write spec.rescheduleTriggeredAt, then judge again as written
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"  # the scheduler failed the fresh schedule
    WAIT = "Wait"


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    reason: str = ""
    message: str = ""


def judge(entry: Entry, binding: BindingState | None) -> Verdict:
    """What to do for one pending entry (module docstring: the order of the rules)."""
    if binding is None:
        return Verdict(Action.NOT_FOUND, REASON_BINDING_NOT_FOUND)
    if binding.triggered_at is None or binding.triggered_at < entry.triggered_at:
        return Verdict(Action.TRIGGER)
    if binding.last_scheduled is not None and binding.last_scheduled >= entry.triggered_at:
        return Verdict(Action.SUCCEEDED)
    decision = binding.decision
    # A decision for the generation whose spec carries the trigger: the fresh schedule itself.
    if (
        decision is not None
        and decision.generation == binding.generation
        and decision.result != SCHEDULE_SUCCESS
    ):
        return Verdict(Action.FAILED, decision.result, decision.message)
    return Verdict(Action.WAIT)


def after_trigger(entry: Entry, binding: BindingState) -> Verdict:
    """The verdict once the trigger is written: its decision history is of an older spec, so only a
    schedule already at or after the trigger counts."""
    if binding.last_scheduled is not None and binding.last_scheduled >= entry.triggered_at:
        return Verdict(Action.SUCCEEDED)
    return Verdict(Action.WAIT)


def settle(entry: Entry, verdict: Verdict) -> Entry:
    """The entry after its verdict (pending ones are unchanged)."""
    if verdict.action is Action.SUCCEEDED:
        return replace(entry, result=RESULT_SUCCESSFUL, reason="")
    if verdict.action in (Action.NOT_FOUND, Action.FAILED):
        return replace(entry, result=RESULT_FAILED, reason=verdict.reason)
    return entry


# -- status and TTL ---------------------------------------------------------------------------------------


def next_status(
    old: Mapping[str, Any] | None, entries: Iterable[Entry], generation: int, now: datetime
) -> dict[str, Any]:
    """The status to store: entries, observedGeneration, and finishTime (module docstring)."""
    items = list(entries)
    status: dict[str, Any] = {
        "observedWorkloads": [e.to_dict() for e in items],
        "observedGeneration": generation,
    }
    if any(e.pending for e in items):
        return status
    previous = dict(old or {})
    finished = previous.pop("finishTime", None)
    status["finishTime"] = finished if finished and previous == status else format_time(now)
    return status


def ttl_deadline(rebalancer: Mapping[str, Any]) -> datetime | None:
    """When a finished rebalancer is deleted; None: kept (no TTL, or not finished)."""
    ttl = (rebalancer.get("spec") or {}).get("ttlSecondsAfterFinished")
    finished = parse_time((rebalancer.get("status") or {}).get("finishTime"))
    if finished is None or not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
        return None
    return finished + timedelta(seconds=ttl)


def counts(entries: Iterable[Entry]) -> tuple[int, int, int]:
    """(successful, failed, pending)."""
    items = list(entries)
    successful = sum(1 for e in items if e.result == RESULT_SUCCESSFUL)
    failed = sum(1 for e in items if e.result == RESULT_FAILED)
    return successful, failed, len(items) - successful - failed
