"""The WorkloadRebalancer controller (Karmada ``pkg/controllers/workloadrebalancer``, semantics §7, issue 9):
asks the scheduler for a fresh placement of each workload a rebalancer names, reports each result once the
scheduler has actually acted, and deletes finished rebalancers after their TTL.

One pass:
1. Every rebalancer as (id, resourceVersion) (one query); for the bindings pending entries wait on,
   (resourceVersion, latest scheduling decision id) (one query each, only while anything is pending). A
   rebalancer is looked at again only when it was written since, a binding it waits on was written or
   scheduled since (only those entries are judged), or its TTL runs out; the rest cost nothing.
2. Those rebalancers, the bindings of their entries to judge and the bindings' latest decisions are loaded
   (one query each). Each rebalancer is then synced and judged (``model/rebalancing``, pure) and written
   in a savepoint of the pass's transaction: its bindings' ``spec.rescheduleTriggeredAt`` by one UPDATE in a
   savepoint (or, if that fails, each binding in a savepoint of its own; the write queues the binding for
   the scheduler: ``derive``), with a Normal event on each; the
   status with the resourceVersion read; events on the rebalancer; the TTL delete with the
   resourceVersion just written.

Per-entry trigger times live in ``status.observedWorkloads[].rescheduleTriggeredAt``, not in an annotation:
status is the controller's (users cannot write it, and ``replace`` keeps it), while a user's ``apply`` of
the manifest rewrites annotations and would erase them. Status is also where a restart reads them back.

Invariants:
- A trigger is only ever moved later (Karmada: set when absent or older), so two rebalancers of one
  workload never undo each other.
- An entry is Successful only once the binding's ``lastScheduledTime`` reaches its trigger; a failed fresh
  schedule (the scheduler's decision for the generation carrying the trigger) is Failed with the
  scheduler's reason; a binding that cannot be written is retried at the next pass, never reported.
- The TTL deadline is ``status.finishTime + ttlSecondsAfterFinished``, both in the database: a restart
  before the deadline keeps it. The delete carries the resourceVersion, so a concurrent edit wins.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from federation.controllers import isolation
from federation.controllers.idle_gate import Probe
from federation.controllers.runtime import Clock, Outcome
from federation.model import rebalancing
from federation.model.rebalancer import API_VERSION, KIND
from federation.model.rebalancing import Action, Entry, LatestDecision
from federation.store import binding_writes, probes
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.dialect import among, pairs_among
from federation.store.events import EventEntry, EventRepository, InvolvedObject
from federation.store.manifest import view
from federation.store.repository import ObjectRepository, manifests_by_id
from federation.store.tables import ResourceBindingRow, SchedulingDecisionRow, WorkloadRebalancerRow

log = logging.getLogger(__name__)

EVENT_SOURCE = "workload-rebalancer"
BINDING_KINDS = ("ResourceBinding", "ClusterResourceBinding")
BindingKey = tuple[str, str]  # (namespace, name); namespace "" is a ClusterResourceBinding
# (binding resourceVersion, latest decision id): what a pending entry's verdict depends on besides itself.
Fingerprint = tuple[int | None, int | None]
ABSENT: Fingerprint = (None, None)


@dataclass(frozen=True, slots=True)
class Memo:
    resource_version: int
    waits: Mapping[BindingKey, Fingerprint]  # the bindings of pending entries, as last judged
    deadline: datetime | None  # the TTL


@dataclass(frozen=True, slots=True)
class Plan:
    """A rebalancer's entries after the modification rules, and which pending ones to judge now."""

    entries: tuple[Entry, ...]
    to_judge: frozenset[BindingKey]


@dataclass(slots=True)
class Loaded:
    """The batch's bindings by key and their latest decisions by binding uid (id, decision). A binding
    written during the pass replaces its entry, so a second rebalancer of it starts from what was written.

    The bindings are views of ``rows`` (``manifest.view``), never edited: judging reads a few fields and a
    trigger builds a new body (``_triggered``)."""

    bindings: dict[BindingKey, dict[str, Any]]
    decisions: dict[str, tuple[int, LatestDecision]]
    # The rows behind ``bindings`` as read (``binding_writes.read_where``): triggers are written from them.
    rows: dict[BindingKey, Any] = field(default_factory=dict)

    def state(self, key: BindingKey) -> rebalancing.BindingState | None:
        binding = self.bindings.get(key)
        return None if binding is None else rebalancing.BindingState.of(binding, self._decision(binding))

    def fingerprint(self, key: BindingKey) -> Fingerprint:
        binding = self.bindings.get(key)
        if binding is None:
            return ABSENT
        latest = self.decisions.get(str(binding["metadata"].get("uid") or ""))
        return int(binding["metadata"]["resourceVersion"]), None if latest is None else latest[0]

    def _decision(self, binding: Mapping[str, Any]) -> LatestDecision | None:
        latest = self.decisions.get(str(binding["metadata"].get("uid") or ""))
        return None if latest is None else latest[1]


@dataclass(frozen=True, slots=True)
class Done:
    """One rebalancer handled: its memo (None: deleted, or retried next pass) and the kinds written."""

    memo: Memo | None
    wrote: frozenset[str]


@dataclass
class WorkloadRebalancerController:
    uow: UnitOfWork
    clock: Clock
    interval_seconds: float = 1.0
    name: str = "workload-rebalancer"
    watches: frozenset[str] = frozenset({KIND, *BINDING_KINDS})
    _memo: dict[int, Memo] = field(default_factory=dict)

    def pending(self) -> Probe:
        """The runner's idle probe: any rebalancer at all (a pass with none and no memo does nothing)."""
        return True if self._memo else probes.workload_rebalancers()

    def reconcile(self) -> Outcome:
        now = self.clock.now()
        rows = self._rebalancers()
        for gone in set(self._memo) - {i for i, _ in rows}:
            del self._memo[gone]
        prints = self._fingerprints({k for m in self._memo.values() for k in m.waits})
        due = self._due(rows, prints, now)
        if not due:
            return Outcome()
        handled, wrote = self._process(due, now)
        return Outcome(handled, wrote)

    # -- which rebalancers ------------------------------------------------------------------------------

    def _rebalancers(self) -> list[tuple[int, int]]:
        statement = select(WorkloadRebalancerRow.id, WorkloadRebalancerRow.resource_version)
        with self.uow() as session:
            return [
                (int(i), int(rv)) for i, rv in session.execute(statement.order_by(WorkloadRebalancerRow.id))
            ]

    def _fingerprints(self, keys: Collection[BindingKey]) -> dict[BindingKey, Fingerprint]:
        if not keys:
            return {}
        b = ResourceBindingRow
        with self.uow() as session:
            keyed = pairs_among(session, (b.namespace, b.name), sorted(keys))
            rows = session.execute(select(b.namespace, b.name, b.resource_version, b.uid).where(keyed)).all()
            latest = _latest_decision_ids(session, [str(uid) for *_, uid in rows])
        return {(ns, name): (int(rv), latest.get(str(uid))) for ns, name, rv, uid in rows}

    def _due(
        self, rows: Sequence[tuple[int, int]], prints: Mapping[BindingKey, Fingerprint], now: datetime
    ) -> dict[int, frozenset[BindingKey] | None]:
        """Rebalancer id → the binding keys to judge again (None: all; empty: only its TTL is due)."""
        due: dict[int, frozenset[BindingKey] | None] = {}
        for rebalancer_id, version in rows:
            memo = self._memo.get(rebalancer_id)
            if memo is None or memo.resource_version != version:
                due[rebalancer_id] = None  # new, written since, or its last pass failed
                continue
            changed = frozenset(k for k, p in memo.waits.items() if prints.get(k, ABSENT) != p)
            if changed or (memo.deadline is not None and memo.deadline <= now):
                due[rebalancer_id] = changed
        return due

    # -- judge and write --------------------------------------------------------------------------------

    def _process(
        self, due: Mapping[int, frozenset[BindingKey] | None], now: datetime
    ) -> tuple[int, frozenset[str]]:
        wrote: set[str] = set()
        with self.uow() as session:
            rebalancers = manifests_by_id(session, WorkloadRebalancerRow, sorted(due))
            plans = {i: _plan(rb, due[i], now) for i, rb in rebalancers.items()}
            loaded = _load(session, {k for p in plans.values() for k in p.to_judge})
            for rebalancer_id, rebalancer in rebalancers.items():
                previous = self._memo.pop(rebalancer_id, None)
                work = functools.partial(
                    self._handle, session, rebalancer, plans[rebalancer_id], loaded, previous, now
                )
                outcome = isolation.isolated(session, work)
                if isinstance(outcome, isolation.Failed):
                    isolation.record_failure(
                        session,
                        InvolvedObject.of(rebalancer),
                        outcome,
                        reason="RebalanceFailed",
                        source=EVENT_SOURCE,
                        now=now,
                    )
                    continue
                if outcome.memo is not None:
                    self._memo[rebalancer_id] = outcome.memo
                wrote |= outcome.wrote
        return len(rebalancers), frozenset(wrote)

    def _handle(
        self,
        session: Session,
        rebalancer: dict[str, Any],
        plan: Plan,
        loaded: Loaded,
        previous: Memo | None,
        now: datetime,
    ) -> Done:
        entries, triggered, retry = self._judge_entries(session, rebalancer, plan, loaded, now)
        meta = rebalancer["metadata"]
        old_status = rebalancer.get("status")
        status = rebalancing.next_status(old_status, entries, int(meta.get("generation") or 1), now)
        repo = ObjectRepository(session, KIND, API_VERSION, clock=self.clock.now)
        stored = rebalancer
        wrote = {str(b["kind"]) for b in triggered}
        _say_triggered(session, rebalancer, triggered, now)
        if status != old_status:
            stored = repo.update_status(None, meta["name"], status, expected_rv=meta["resourceVersion"])
            wrote.add(KIND)
            _say_finished(session, stored, old_status or {}, entries, now)
        deadline = rebalancing.ttl_deadline(stored)
        if deadline is not None and deadline <= now:
            repo.delete(None, meta["name"], expected_rv=stored["metadata"]["resourceVersion"])
            log.info("workload rebalancer %s: deleted %s after it finished", meta["name"], _ttl(stored))
            return Done(None, frozenset({*wrote, KIND}))
        if retry:
            return Done(None, frozenset(wrote))  # judged again, whole, next pass
        waits = _waits(entries, plan, loaded, previous)
        return Done(Memo(int(stored["metadata"]["resourceVersion"]), waits, deadline), frozenset(wrote))

    def _judge_entries(
        self, session: Session, rebalancer: Mapping[str, Any], plan: Plan, loaded: Loaded, now: datetime
    ) -> tuple[list[Entry], list[dict[str, Any]], bool]:
        """The entries after their verdicts, the bindings triggered, and whether a trigger must be retried."""
        verdicts: dict[BindingKey, rebalancing.Verdict] = {}
        for entry in plan.entries:
            key = entry.workload.binding_key()
            if entry.pending and key in plan.to_judge:
                verdicts[key] = rebalancing.judge(entry, loaded.state(key))
        wanted = [
            e for e in plan.entries if verdicts.get(e.workload.binding_key(), _WAIT).action is Action.TRIGGER
        ]
        written = self._trigger_all(session, rebalancer, wanted, loaded, now)
        entries: list[Entry] = []
        triggered: list[dict[str, Any]] = []
        retry = False
        for entry in plan.entries:
            key = entry.workload.binding_key()
            verdict = verdicts.get(key)
            if verdict is None:
                entries.append(entry)
                continue
            if verdict.action is Action.TRIGGER:
                binding = written.get(key)
                if binding is None:
                    retry = True
                    entries.append(entry)
                    continue
                triggered.append(binding)
                verdict = rebalancing.after_trigger(entry, rebalancing.BindingState.of(binding, None))
            entries.append(rebalancing.settle(entry, verdict))
            if verdict.action in (Action.FAILED, Action.NOT_FOUND):
                _say_failed(session, rebalancer, entry, verdict, now)
        return entries, triggered, retry

    def _trigger_all(
        self,
        session: Session,
        rebalancer: Mapping[str, Any],
        entries: Sequence[Entry],
        loaded: Loaded,
        now: datetime,
    ) -> dict[BindingKey, dict[str, Any]]:
        """Write the entries' triggers: all by one flush (a savepoint), or if that fails each in a savepoint
        of its own, so one binding that cannot be written is retried alone. Key → the binding as written
        (absent: its write failed); a written binding replaces its entry in ``loaded``."""
        if not entries:
            return {}

        def each() -> dict[BindingKey, dict[str, Any]]:
            written = {}
            for entry in entries:
                key = entry.workload.binding_key()
                binding = self._trigger_isolated(session, rebalancer, loaded.bindings[key], entry, now)
                if binding is not None:
                    written[key] = binding
            return written

        batch = functools.partial(self._trigger_batch, session, rebalancer, entries, loaded, now)
        written = isolation.batch_or_each(session, batch, each, "workload rebalancer")
        loaded.bindings.update(written)
        return written

    def _trigger_batch(
        self,
        session: Session,
        rebalancer: Mapping[str, Any],
        entries: Sequence[Entry],
        loaded: Loaded,
        now: datetime,
    ) -> dict[BindingKey, dict[str, Any]]:
        keys: list[BindingKey] = []
        rewrites: list[binding_writes.Rewrite] = []
        events: list[EventEntry] = []
        for entry in entries:
            key = entry.workload.binding_key()
            body, message = _triggered(rebalancer, loaded.bindings[key], entry)
            keys.append(key)
            rewrites.append(binding_writes.Rewrite(loaded.rows[key], body))
            events.append(EventEntry(InvolvedObject.of(body), "Normal", "RescheduleTriggered", message))
        written = binding_writes.rewrite(session, rewrites, self.clock.now())
        EventRepository(session).record_many(events, now=now, source=EVENT_SOURCE)
        return dict(zip(keys, written, strict=True))

    def _trigger_isolated(
        self,
        session: Session,
        rebalancer: Mapping[str, Any],
        binding: dict[str, Any],
        entry: Entry,
        now: datetime,
    ) -> dict[str, Any] | None:
        """The binding with the entry's trigger written (its own savepoint); None when that failed."""
        work = functools.partial(self._trigger, session, rebalancer, binding, entry, now)
        outcome = isolation.isolated(session, work)
        if not isinstance(outcome, isolation.Failed):
            return outcome
        isolation.record_failure(
            session,
            InvolvedObject.of(binding),
            outcome,
            reason="TriggerRescheduleFailed",
            source=EVENT_SOURCE,
            now=now,
        )
        return None

    def _trigger(
        self,
        session: Session,
        rebalancer: Mapping[str, Any],
        binding: dict[str, Any],
        entry: Entry,
        now: datetime,
    ) -> dict[str, Any]:
        namespace = binding["metadata"].get("namespace") or ""
        body, message = _triggered(rebalancer, binding, entry)
        written = BindingRepository(session, clock=self.clock.now).objects(namespace).replace(body)
        event = EventEntry(InvolvedObject.of(written), "Normal", "RescheduleTriggered", message)
        EventRepository(session).record_many([event], now=now, source=EVENT_SOURCE)
        return written


_WAIT = rebalancing.Verdict(Action.WAIT)


def _triggered(
    rebalancer: Mapping[str, Any], binding: Mapping[str, Any], entry: Entry
) -> tuple[dict[str, Any], str]:
    """The binding with the entry's trigger (a new top level and spec; the rest shared with ``binding``,
    its status included: ``replace`` keeps the stored one anyway) and the event message."""
    at = rebalancing.format_time(entry.triggered_at)
    body = dict(binding)
    body["spec"] = {**binding["spec"], "rescheduleTriggeredAt": at}
    name = rebalancer["metadata"]["name"]
    return body, f"WorkloadRebalancer {name} asked for a fresh placement (rescheduleTriggeredAt {at})"


# -- pure steps and reads ---------------------------------------------------------------------------------


def _plan(rebalancer: Mapping[str, Any], changed: frozenset[BindingKey] | None, now: datetime) -> Plan:
    entries = rebalancing.sync_workloads(
        rebalancing.spec_workloads(rebalancer),
        rebalancing.observed_entries(rebalancer),
        rebalancing.trigger_for_added(rebalancer, now),
    )
    pending = frozenset(e.workload.binding_key() for e in entries if e.pending)
    return Plan(tuple(entries), pending if changed is None else pending & changed)


def _waits(
    entries: Sequence[Entry], plan: Plan, loaded: Loaded, previous: Memo | None
) -> dict[BindingKey, Fingerprint]:
    """The fingerprints the pending entries were judged on: this pass's, or the memo's for the entries
    not judged again (their bindings did not change)."""
    before = previous.waits if previous is not None else {}
    pending = {e.workload.binding_key() for e in entries if e.pending}
    return {k: loaded.fingerprint(k) if k in plan.to_judge else before.get(k, ABSENT) for k in pending}


def _load(session: Session, keys: Collection[BindingKey]) -> Loaded:
    """The bindings of these keys and their latest decisions: one query each."""
    if not keys:
        return Loaded({}, {})
    b = ResourceBindingRow
    found = binding_writes.read_where(session, pairs_among(session, (b.namespace, b.name), sorted(keys)))
    rows = {(row.namespace, row.name): row for row in found}
    bindings = {key: view(row) for key, row in rows.items()}
    uids = [str(binding["metadata"]["uid"]) for binding in bindings.values()]
    return Loaded(bindings, _latest_decisions(session, uids), rows)


def _latest_decision_ids(session: Session, uids: Sequence[str]) -> dict[str, int]:
    if not uids:
        return {}
    d = SchedulingDecisionRow
    statement = (
        select(d.binding_uid, func.max(d.id))
        .where(among(session, d.binding_uid, uids))
        .group_by(d.binding_uid)
    )
    return {str(uid): int(latest) for uid, latest in session.execute(statement)}


def _latest_decisions(session: Session, uids: Sequence[str]) -> dict[str, tuple[int, LatestDecision]]:
    if not uids:
        return {}
    d = SchedulingDecisionRow
    latest = select(func.max(d.id)).where(among(session, d.binding_uid, uids)).group_by(d.binding_uid)
    statement = select(d.id, d.binding_uid, d.binding_generation, d.result, d.message).where(d.id.in_(latest))
    return {
        str(uid): (int(i), LatestDecision(generation, str(result), str(message or "")))
        for i, uid, generation, result, message in session.execute(statement)
    }


# -- saying what happened ---------------------------------------------------------------------------------


def _say_triggered(
    session: Session, rebalancer: Mapping[str, Any], triggered: Sequence[Mapping[str, Any]], now: datetime
) -> None:
    if not triggered:
        return
    message = f"Asked the scheduler for a fresh placement of {len(triggered)} workload(s)"
    EventRepository(session).record(
        InvolvedObject.of(rebalancer), "Normal", "RescheduleTriggered", message, now=now, source=EVENT_SOURCE
    )
    log.info("workload rebalancer %s: %s", rebalancer["metadata"]["name"], message)


def _say_finished(
    session: Session,
    rebalancer: Mapping[str, Any],
    old_status: Mapping[str, Any],
    entries: Sequence[Entry],
    now: datetime,
) -> None:
    """Once per finish (a modification that finishes again says it again)."""
    finished = (rebalancer.get("status") or {}).get("finishTime")
    if not finished or finished == old_status.get("finishTime"):
        return
    successful, failed, _ = rebalancing.counts(entries)
    message = f"Finished: {successful} of {len(entries)} workload(s) rescheduled, {failed} failed"
    EventRepository(session).record(
        InvolvedObject.of(rebalancer),
        "Warning" if failed else "Normal",
        "RebalanceFinished",
        message,
        now=now,
        source=EVENT_SOURCE,
    )
    log.info("workload rebalancer %s: %s", rebalancer["metadata"]["name"], message)


def _say_failed(
    session: Session, rebalancer: Mapping[str, Any], entry: Entry, verdict: rebalancing.Verdict, now: datetime
) -> None:
    detail = verdict.message
    if verdict.action is Action.NOT_FOUND:
        namespace, name = entry.workload.binding_key()
        kind = BINDING_KINDS[0] if namespace else BINDING_KINDS[1]
        detail = f"no {kind} {namespace + '/' if namespace else ''}{name}"
    message = f"{entry.workload.label()}: {verdict.reason}" + (f": {detail}" if detail else "")
    EventRepository(session).record(
        InvolvedObject.of(rebalancer),
        "Warning",
        "WorkloadRebalanceFailed",
        message,
        now=now,
        source=EVENT_SOURCE,
    )


def _ttl(rebalancer: Mapping[str, Any]) -> str:
    return f"{(rebalancer.get('spec') or {}).get('ttlSecondsAfterFinished')}s (ttlSecondsAfterFinished)"
