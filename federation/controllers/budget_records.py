"""What application failover writes besides the eviction itself: the budget annotations on the template,
the ``FailoverExhausted`` condition, history rows and events (split from ``application_failover`` so each
file reads on its own).

Invariants:
- Every write here runs inside the caller's transaction (a savepoint of the pass); nothing commits.
- The template is written with the resourceVersion read: a concurrent writer is a Conflict the caller
  retries, never a lost update.
- An event or history row is written only with the change it reports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from federation.controllers import conditions
from federation.model import budget, failover
from federation.store.errors import NotFound
from federation.store.events import EventRepository, InvolvedObject
from federation.store.history import (
    BUDGET_CHANGED,
    EVICTED,
    FAILOVER_EXHAUSTED,
    HistoryEntry,
    HistoryRepository,
)
from federation.store.repository import ObjectRepository
from federation.store.types import utcnow

log = logging.getLogger(__name__)

EVENT_SOURCE = "application-failover-controller"
CONDITION_EXHAUSTED = "FailoverExhausted"
REASON_SPENT = "BudgetSpent"
REASON_NOT_EXHAUSTED = "NotExhausted"
REASON_RESCHEDULED = "Rescheduled"
REASON_BUDGET_RESET = "HealthyRunReset"
REASON_AVOID_CLEARED = "AvoidListCleared"


def load_template(
    session: Session, binding: Mapping[str, Any], clock: Callable[[], datetime] = utcnow
) -> tuple[ObjectRepository, dict[str, Any]]:
    """The binding's template, read in this transaction (NotFound when it is gone or replaced)."""
    resource = (binding.get("spec") or {}).get("resource") or {}
    kind, api_version = str(resource.get("kind") or ""), str(resource.get("apiVersion") or "")
    namespace, name = str(resource.get("namespace") or ""), str(resource.get("name") or "")
    templates = ObjectRepository(session, kind, api_version, clock=clock)
    template = templates.get(namespace, name)
    if template is None or (resource.get("uid") and template["metadata"].get("uid") != resource["uid"]):
        raise NotFound(kind, namespace, name)
    return templates, template


def write_annotations(
    templates: ObjectRepository, template: dict[str, Any], changes: Mapping[str, str | None]
) -> dict[str, Any]:
    """The template with these annotations set (None: removed), written with the resourceVersion read."""
    annotations = dict(template["metadata"].get("annotations") or {})
    for key, value in changes.items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    if annotations == (template["metadata"].get("annotations") or {}):
        return template
    return templates.replace({**template, "metadata": {**template["metadata"], "annotations": annotations}})


def clear_avoid_list(
    session: Session, binding: Mapping[str, Any], now: datetime, clock: Callable[[], datetime] = utcnow
) -> int:
    """The scheduler had to ignore the tried clusters to place the workload at all: empty the tried list
    (the count stays), with a history row and an event. 1 when the template was written."""
    try:
        templates, template = load_template(session, binding, clock)
    except NotFound:
        return 0  # the template is gone; its binding follows it
    current = budget.read_budget(template, None)
    cleared = current.tried.cleared()
    if cleared == current.tried:
        return 0
    write_annotations(templates, template, {budget.TRIED_CLUSTERS_ANNOTATION: cleared.encode()})
    tried = ", ".join(current.tried.clusters())
    message = (
        f"Only clusters the workload already failed on ({tried}) could take it: the tried list is cleared "
        f"(the reschedule count stays at {current.count})"
    )
    entry = HistoryEntry.for_binding(
        dict(binding),
        at=now,
        action=BUDGET_CHANGED,
        reason=REASON_AVOID_CLEARED,
        producer="scheduler",
        message=message,
    )
    HistoryRepository(session).record([entry])
    events = EventRepository(session)
    for involved in (InvolvedObject.of(binding), InvolvedObject.of(template)):
        events.record(involved, "Normal", REASON_AVOID_CLEARED, message, now=now, source="scheduler")
    return 1


def write_exhausted(
    session: Session,
    repo: ObjectRepository,
    binding: dict[str, Any],
    template: Mapping[str, Any],
    refused: Sequence[budget.Charge],
    now: datetime,
) -> int:
    """``FailoverExhausted`` True while the budget holds a failing cluster back, else False once it was
    True; said (event, history) only when it turns True or its message changes."""
    status = dict(binding.get("status") or {})
    current = conditions.find(status.get("conditions"), CONDITION_EXHAUSTED)
    if not refused and current is None:
        return 0
    message = "; ".join(c.message() for c in refused) or "No failing cluster is held back by the budget"
    reason = REASON_SPENT if refused else REASON_NOT_EXHAUSTED
    new = conditions.upsert(
        status.get("conditions"), CONDITION_EXHAUSTED, bool(refused), reason, message, now
    )
    if new == status.get("conditions"):
        return 0
    status["conditions"] = new
    meta = binding["metadata"]
    repo.update_status(meta.get("namespace") or "", meta["name"], status, expected_rv=meta["resourceVersion"])
    if refused:
        _say_exhausted(session, binding, template, refused, message, now)
    return 1


def say_evicted(
    session: Session,
    binding: dict[str, Any],
    template: Mapping[str, Any],
    allowed: Sequence[tuple[budget.Charge, str]],
    now: datetime,
) -> None:
    """Each eviction (with its message) and its budget change: events and history rows."""
    events = EventRepository(session)
    entries: list[HistoryEntry] = []
    for charged, message in allowed:
        entries.append(_say_eviction(events, binding, charged, message, now))
        entries.extend(_say_budget(events, binding, template, charged, now))
    HistoryRepository(session).record(entries)


def _say_eviction(
    events: EventRepository, binding: Mapping[str, Any], charged: budget.Charge, message: str, now: datetime
) -> HistoryEntry:
    involved = InvolvedObject.of(binding)
    events.record(
        involved, "Warning", "EvictWorkloadFromClusterSucceed", message, now=now, source=EVENT_SOURCE
    )
    log.info("application failover: %s: %s; %s", describe(binding), message, charged.message())
    return _entry(binding, now, EVICTED, charged.cluster, failover.REASON_APPLICATION_FAILURE, message)


def _say_budget(
    events: EventRepository,
    binding: Mapping[str, Any],
    template: Mapping[str, Any],
    charged: budget.Charge,
    now: datetime,
) -> list[HistoryEntry]:
    """The budget change on the template (events) and in the history; a reset first, when there was one."""
    involved, entries = InvolvedObject.of(template), []
    for problem in charged.before.problems:
        events.record(involved, "Warning", "InvalidFailoverBudget", problem, now=now, source=EVENT_SOURCE)
    if charged.reset:
        reset = (
            f"The workload ran Healthy on {charged.cluster} for {charged.healthy_run_seconds:.0f}s "
            "before it failed: the failover budget starts again"
        )
        events.record(involved, "Normal", "FailoverBudgetReset", reset, now=now, source=EVENT_SOURCE)
        entries.append(_entry(binding, now, BUDGET_CHANGED, charged.cluster, REASON_BUDGET_RESET, reset))
    message = charged.message()
    events.record(involved, "Normal", "FailoverBudgetChanged", message, now=now, source=EVENT_SOURCE)
    entries.append(_entry(binding, now, BUDGET_CHANGED, charged.cluster, REASON_RESCHEDULED, message))
    return entries


def _say_exhausted(
    session: Session,
    binding: Mapping[str, Any],
    template: Mapping[str, Any],
    refused: Sequence[budget.Charge],
    message: str,
    now: datetime,
) -> None:
    entries = [
        _entry(binding, now, FAILOVER_EXHAUSTED, c.cluster, CONDITION_EXHAUSTED, c.message()) for c in refused
    ]
    HistoryRepository(session).record(entries)
    events = EventRepository(session)
    for involved in (InvolvedObject.of(binding), InvolvedObject.of(template)):
        events.record(involved, "Warning", CONDITION_EXHAUSTED, message, now=now, source=EVENT_SOURCE)
    log.warning("application failover: %s: %s", describe(binding), message)


def _entry(
    binding: Mapping[str, Any], at: datetime, action: str, cluster: str, reason: str, message: str
) -> HistoryEntry:
    return HistoryEntry.for_binding(
        dict(binding),
        at=at,
        action=action,
        cluster=cluster,
        reason=reason,
        producer=failover.PRODUCER_APPLICATION_FAILOVER,
        message=message,
    )


def describe(binding: Mapping[str, Any]) -> str:
    meta = binding.get("metadata") or {}
    return f"{binding.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')}"
