"""Graceful eviction (Karmada ``pkg/controllers/gracefuleviction``): a binding's eviction tasks hold the old
cluster's Work until the new placement is healthy, the task times out, or a user confirms it.

One pass:
1. The bindings that have tasks, as (id, resourceVersion) from the indexed task rows (one query). A binding
   is assessed again only when it was written since (a health change rewrites its status) or its earliest
   timeout falls; the rest cost nothing.
2. Those bindings are loaded (one query) and assessed (``failover.assess_tasks``, pure). Removing tasks is
   one spec write per binding in a savepoint, with a history row and an event per task; the execution
   controller then tombstones the old Work (its cluster is no longer held).

Invariants:
- Deadlines live in the database (each task's ``creationTimestamp`` + ``gracePeriodSeconds`` or the global
  timeout): a restart in the middle of a grace period keeps it. A task without ``creationTimestamp``
  (written by hand) gets one now, as Karmada does.
- The last-copy guard: while no target cluster runs the workload Healthy, Gracefully/Never tasks are
  kept and their timeout does not fire; the binding's ``GracefulEvictionHeld`` condition says why.
- Runs whether or not failover is enabled: it only ever lets old copies go.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.controllers import conditions, isolation
from federation.controllers.idle_gate import Probe
from federation.controllers.runtime import Clock, Outcome
from federation.model import failover
from federation.store import probes
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.events import EventRepository, InvolvedObject
from federation.store.history import TASK_REMOVED, HistoryEntry, HistoryRepository
from federation.store.manifest import format_timestamp
from federation.store.repository import manifests_by_id
from federation.store.tables import GracefulEvictionTaskRow, ResourceBindingRow

log = logging.getLogger(__name__)

EVENT_SOURCE = "graceful-eviction-controller"
BINDING_KINDS = ("ResourceBinding", "ClusterResourceBinding")
CONDITION_HELD = "GracefulEvictionHeld"
REASON_NO_HEALTHY_REPLACEMENT = "NoHealthyReplacement"
REASON_RELEASED = "EvictionTasksReleased"
REMOVAL_MESSAGES = {
    "Healthy": "the new placement is healthy",
    "Timeout": "the grace period is over",
    "Confirmed": "suppressDeletion was set to false",
}


@dataclass
class GracefulEvictionController:
    uow: UnitOfWork
    clock: Clock
    timeout_seconds: float = 600.0
    interval_seconds: float = 1.0
    name: str = "graceful-eviction"
    watches: frozenset[str] = frozenset(BINDING_KINDS)
    # binding id → (resourceVersion assessed, when to look again or None: at its next write).
    _assessed: dict[int, tuple[int, datetime | None]] = field(default_factory=dict)

    def pending(self) -> Probe:
        """The runner's idle probe: an eviction task anywhere (or memos of bindings to forget)."""
        return True if self._assessed else probes.graceful_eviction_tasks()

    def reconcile(self) -> Outcome:
        now = self.clock.now()
        due = self._due(self._with_tasks(), now)
        if not due:
            return Outcome()
        written = 0
        with self.uow() as session:
            for binding_id, binding in manifests_by_id(session, ResourceBindingRow, due).items():
                assess = functools.partial(self._assess, session, binding_id, binding, now)
                outcome = isolation.isolated(session, assess)
                if isinstance(outcome, isolation.Failed):
                    self._assessed.pop(binding_id, None)
                    isolation.record_failure(
                        session,
                        InvolvedObject.of(binding),
                        outcome,
                        reason="AssessEvictionFailed",
                        source=EVENT_SOURCE,
                        now=now,
                    )
                else:
                    written += outcome
        return Outcome.of(written, *BINDING_KINDS)

    def _with_tasks(self) -> list[tuple[int, int]]:
        statement = (
            select(ResourceBindingRow.id, ResourceBindingRow.resource_version)
            .where(ResourceBindingRow.id.in_(select(GracefulEvictionTaskRow.binding_id)))
            .order_by(ResourceBindingRow.id)
        )
        with self.uow() as session:
            return [(int(i), int(rv)) for i, rv in session.execute(statement)]

    def _due(self, bindings: Sequence[tuple[int, int]], now: datetime) -> list[int]:
        present = {i for i, _ in bindings}
        for gone in [i for i in self._assessed if i not in present]:
            del self._assessed[gone]
        due = []
        for binding_id, version in bindings:
            memo = self._assessed.get(binding_id)
            if memo is None or memo[0] != version or (memo[1] is not None and memo[1] <= now):
                due.append(binding_id)
        return due

    def _assess(self, session: Session, binding_id: int, binding: dict[str, Any], now: datetime) -> int:
        """Assess one binding's tasks and write what changed; how many objects were written."""
        result = failover.assess_tasks(binding, self.timeout_seconds, now)
        tasks = [dict(t) for t in result.kept]
        stamped = _stamp(tasks, now)
        written = 0
        if result.removed or stamped:
            binding = self._write_tasks(session, binding, tasks, result.removed, now)
            written += 1
        written += self._write_condition(session, binding, result, now)
        self._assessed[binding_id] = (int(binding["metadata"]["resourceVersion"]), result.next_at)
        return written

    def _write_tasks(
        self,
        session: Session,
        binding: dict[str, Any],
        kept: list[dict[str, Any]],
        removed: Sequence[tuple[Mapping[str, Any], failover.Removal]],
        now: datetime,
    ) -> dict[str, Any]:
        meta = binding["metadata"]
        namespace = meta.get("namespace") or ""
        binding["spec"] = {**binding["spec"], "gracefulEvictionTasks": kept}
        if not kept:
            del binding["spec"]["gracefulEvictionTasks"]
        stored = BindingRepository(session).objects(namespace).replace(binding)
        entries, events = [], EventRepository(session)
        for task, why in removed:
            cluster = str(task.get("fromCluster"))
            message = f"Graceful eviction from {cluster} is over: {REMOVAL_MESSAGES[why]}"
            entries.append(
                HistoryEntry.for_binding(
                    stored,
                    at=now,
                    action=TASK_REMOVED,
                    cluster=cluster,
                    reason=why,
                    producer=str(task.get("producer") or ""),
                    message=message,
                )
            )
            events.record(
                InvolvedObject.of(stored),
                "Normal",
                "EvictionTaskRemoved",
                message,
                now=now,
                source=EVENT_SOURCE,
            )
            log.info("graceful eviction: %s %s/%s: %s", stored["kind"], namespace, meta["name"], message)
        HistoryRepository(session).record(entries)
        return stored

    def _write_condition(
        self, session: Session, binding: dict[str, Any], result: failover.Assessment, now: datetime
    ) -> int:
        """Say on the binding whether the last-copy guard holds its tasks (only when that changes)."""
        status = dict(binding.get("status") or {})
        held = result.last_copy
        current = conditions.find(status.get("conditions"), CONDITION_HELD)
        if current is None and not held:
            return 0
        clusters = ", ".join(str(t.get("fromCluster")) for t in result.kept)
        reason, message = (
            (
                REASON_NO_HEALTHY_REPLACEMENT,
                f"No target cluster runs the workload healthy yet; the old copies on "
                f"{clusters} are kept and their grace period waits",
            )
            if held
            else (
                REASON_RELEASED,
                "A target cluster runs the workload healthy; eviction tasks follow their rules",
            )
        )
        new_conditions = conditions.upsert(
            status.get("conditions"), CONDITION_HELD, held, reason, message, now
        )
        if new_conditions == status.get("conditions"):
            return 0
        status["conditions"] = new_conditions
        meta = binding["metadata"]
        namespace = meta.get("namespace") or ""
        stored = (
            BindingRepository(session)
            .objects(namespace)
            .update_status(namespace, meta["name"], status, expected_rv=meta["resourceVersion"])
        )
        binding["metadata"] = stored["metadata"]
        return 1


def _stamp(tasks: list[dict[str, Any]], now: datetime) -> bool:
    """Give every task without ``creationTimestamp`` one (Karmada); True if any was given."""
    stamped = False
    for task in tasks:
        if not task.get("creationTimestamp"):
            task["creationTimestamp"] = format_timestamp(now)
            stamped = True
    return stamped
