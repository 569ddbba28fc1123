"""The scheduler: claims bindings that need scheduling, runs the engine, writes the result.

One reconcile:
1. Cluster changes: claim queued clusters (``clusters.requeue_bindings``), re-queue the bindings on them
   and the cluster-sensitive bindings (not Scheduled, Duplicated, non-workload) whose affinity matches
   one of them (Karmada ``enqueueAffectedBindings``). Two queries plus one UPDATE per batch of clusters.
2. Batches of queued bindings: one transaction claims the batch with its rows whole (the claim's
   RETURNING) and reads the batch's templates (one query, whatever the batch size); the first batch of a
   pass also reads every cluster (as snapshots, kept between passes: ``cluster_snapshots``) and every
   WorkloadPolicy, for the pass (``PassReads``); when a batch binding's namespace has a WorkloadPolicy,
   one more query reads where that namespace's bindings run (``store.placements``: the counts a policy
   shares across its workloads). Each binding is then decided in memory (``planner``/``engine``), the
   capacity it takes is assumed for the rest of the cycle (``engine.assume``) and its place in its
   policy's counts recorded (``planner.record_quota``), so bindings sharing a quota are decided in batch
   order. The batch's writes are one transaction: the bindings as column values from the rows the claim
   read (``store.binding_writes``: a fixed handful of statements, each row checked against its version),
   then one INSERT of decision records, one event upsert and the claim releases. If that transaction
   fails (a binding changed since its claim included), each binding is written in its own transaction, so
   only the culprit is affected.
3. On Postgres a batch's write runs on a thread of its own while the next batch is claimed and decided
   (``BatchWrites``): most of a write is waiting for the database, which the engine's work for the next
   batch fills. Up to ``writes_in_flight`` (2) writes are in flight, committing in any order (their
   bindings are disjoint); the pass returns when all are committed. A batch that reads WorkloadPolicy
   counts waits for the writes before it (its ledger must see the placements written so far) and reads
   its cycle state again.

Invariants:
- Karmada's triggers decide (``planner.scheduling_trigger``); with none, only
  ``schedulerObservedGeneration`` is synced. ``spec.suspension.scheduling`` bindings are skipped.
- Success and NoClusterFit finish the claim (NoClusterFit waits for a cluster change); Unschedulable and
  SchedulerError are retried after ``initial * 2^(n-1)`` seconds (n = consecutive failed decisions,
  capped at the maximum). A write that lost a race (the binding's generation moved, or a concurrent
  writer) is retried at the next tick: a decision is only written for the generation it was made for.
- A Success is told to the binder extender (``bindVerb``, ``extenders_run.extenders_bind``) after the
  decision and before the write; its error makes the decision a SchedulerError (nothing placed, retried
  with back-off). A write that then loses a race is decided, and bound, again.
- Any other failure of one binding (a malformed binding the engine or planner cannot read) releases
  that binding's claim with back-off (``claims.fail``) and a Warning event; the batch goes on.
- The engine avoids the clusters in the template's failover tried list; a result that had to ignore
  them clears that list in the same transaction as the decision (``budget_records``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_
from sqlalchemy.orm import Session

from federation.controllers import budget_records, isolation
from federation.controllers.batch_pipeline import BatchWrites, NextBatch
from federation.controllers.cluster_snapshots import SnapshotCache, cluster_snapshots
from federation.controllers.idle_gate import Probe
from federation.controllers.runtime import Clock, Outcome
from federation.model.workloadpolicy import APPLIED_WORKLOAD_POLICY_ANNOTATION, WorkloadPolicy
from federation.scheduling import engine, planner
from federation.scheduling.extender import Extender
from federation.scheduling.extenders_run import extenders_bind
from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import ClusterSnapshot, EngineConfig, ScheduleResult, TargetCluster
from federation.scheduling.workloadpolicy import QuotaLedger, ledger_of
from federation.store import binding_writes, claims, requeue
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.decisions import Decision, DecisionRepository
from federation.store.errors import Conflict, NotFound
from federation.store.events import EventEntry, EventRepository, InvolvedObject
from federation.store.manifest import view
from federation.store.placements import placed_bindings
from federation.store.repository import ObjectRepository
from federation.store.tables import ClusterRow, ResourceBindingRow
from federation.store.templates import template_views_by_uid

log = logging.getLogger(__name__)

WORKLOAD_POLICY_API_VERSION = "kosmos.io/v1alpha1"
RETRIED = frozenset({"Unschedulable", "SchedulerError"})
EVENT_SOURCE = "scheduler"
Manifest = dict[str, Any]


@dataclass
class CycleState:
    """What one scheduling cycle reads once and shares across its bindings."""

    clusters: list[ClusterSnapshot]
    workload_policies: list[Manifest]
    templates: dict[str, Manifest]
    # Where the workloads under each WorkloadPolicy run; updated after every decision of the cycle.
    quota: QuotaLedger = field(default_factory=QuotaLedger)
    # Per-cluster filter verdicts, estimates and scores shared by the cycle's bindings (keyed by snapshot
    # identity, so a cluster that took replicas through ``engine.assume`` is judged afresh).
    memo: CycleMemo = field(default_factory=CycleMemo)
    # The clusters that exist and are not being deleted: nothing ``engine.assume`` changes changes it.
    live: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.live = planner.live_clusters(self.clusters)


@dataclass(frozen=True)
class Pending:
    """One binding's decision, made in memory, waiting for the batch write."""

    item: claims.Claim
    stored: Any  # the binding's row as the cycle read it (``binding_writes.read``)
    binding: Manifest  # its manifest (a view of ``stored``)
    render: Callable[[Manifest], Manifest]
    result: ScheduleResult | None
    workload_policy: str = ""  # the key of the WorkloadPolicy governing it ("" for none)


@dataclass
class Scheduler:
    uow: UnitOfWork
    clock: Clock
    identity: str
    config: EngineConfig = field(default_factory=EngineConfig)
    extenders: Sequence[Extender] = ()
    interval_seconds: float = 1.0
    batch_size: int = 100
    claim_seconds: float = 60.0
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 300.0
    # Batches per reconcile: bounds one pass when bindings keep arriving; the next tick continues.
    max_batches: int = 10
    # Batch writes in flight at once on Postgres (``BatchWrites``).
    writes_in_flight: int = 2
    name: str = "scheduler"
    watches: frozenset[str] = frozenset(
        {"ResourceBinding", "ClusterResourceBinding", "Cluster", "WorkloadPolicy"}
    )
    _snapshots: SnapshotCache = field(default_factory=SnapshotCache, init=False, repr=False)

    def pending(self) -> Probe:
        """The runner's idle probe: a changed cluster or a binding this pass would claim."""
        now = self.clock.now()
        return or_(claims.claimable(ClusterRow, now), claims.claimable(ResourceBindingRow, now))

    def reconcile(self) -> Outcome:
        self._requeue_for_cluster_changes()
        reads = PassReads(self._snapshots)
        overlap = self.uow.is_postgres()
        # The pass's claims are held for this thread (renewed while it runs), whichever thread claims them.
        fetch = functools.partial(self._claim_batch, threading.get_ident())
        with (
            BatchWrites(overlap=overlap, depth=self.writes_in_flight) as writes,
            NextBatch(fetch, prefetch=overlap) as batches,
        ):
            for index in range(self.max_batches):
                claimed = batches.take()
                full = len(claimed.rows) == self.batch_size
                if full and index + 1 < self.max_batches:
                    batches.start()  # the next batch is claimed while this one is decided
                self._cycle(claimed, writes, reads)
                if not full:
                    break
        return Outcome.of(writes.written, "ResourceBinding", "ClusterResourceBinding")

    # -- cluster changes ----------------------------------------------------------------------------

    def _requeue_for_cluster_changes(self) -> int:
        requeued = 0
        for _ in range(self.max_batches):
            with self.uow() as session:
                changed = claims.claim(
                    session, ClusterRow, self.identity, self.batch_size, self.clock.now(), self.claim_seconds
                )
                if changed:
                    requeued += _requeue_affected(session, [c.id for c in changed])
                    claims.release(session, ClusterRow, changed, self.identity, done=True)
            if len(changed) < self.batch_size:
                break
        return requeued

    # -- bindings -----------------------------------------------------------------------------------

    def _claim_batch(self, holder: int) -> Claimed:
        """Claim a batch, with its rows whole (the claim's RETURNING: what the write needs) and its
        templates, in one transaction; the claims are held for thread ``holder`` (the pass's)."""
        with self.uow() as session:
            rows = claims.claim_rows(
                session,
                ResourceBindingRow,
                self.identity,
                self.batch_size,
                self.clock.now(),
                self.claim_seconds,
                columns=binding_writes.COLUMNS,
                holder=holder,
            )
            uids = {str(((row.spec or {}).get("resource") or {}).get("uid") or "") for _, row in rows}
            # Views without status: the engine reads a template's labels and annotations, never changes them.
            return Claimed(rows, template_views_by_uid(session, sorted(uids - {""})))

    def _cycle(self, claimed: Claimed, writes: BatchWrites, reads: PassReads) -> int:
        """Decide one claimed batch and hand its write to ``writes``; the bindings claimed."""
        if not claimed.rows:
            return 0
        items = [item for item, _ in claimed.rows]
        stored = {item.id: row for item, row in claimed.rows}
        # Views, not copies: a decision reads its binding and every render builds a new manifest
        # (``planner.apply_result``).
        bindings = {row_id: view(row) for row_id, row in stored.items()}
        state = self._cycle_state(claimed, list(bindings.values()), writes, reads)
        suspended: list[claims.Claim] = []
        pending: list[Pending] = []
        for item in items:
            binding = bindings.get(item.id)
            if binding is None:
                continue
            try:
                decided = self._decide_binding(item, stored[item.id], binding, state)
            except isolation.OUTAGE:
                raise
            except Exception as exc:  # one binding's failure must not leave the rest of the batch claimed
                self._failed(item, isolation.Failed(exc))
                continue
            if decided is None:
                suspended.append(item)
            else:
                pending.append(decided)
        if suspended:
            with self.uow() as session:
                claims.release(session, ResourceBindingRow, suspended, self.identity, done=True)
        # A batch short of full is the pass's last: written on this thread (a pass of one batch, the usual
        # case when bindings trickle in, never starts the worker).
        writes.submit(self._write_batch, pending, last=len(items) < self.batch_size)
        return len(items)

    def _cycle_state(
        self, claimed: Claimed, bindings: Sequence[Manifest], writes: BatchWrites, reads: PassReads
    ) -> CycleState:
        """The batch's cycle state: the pass's clusters and WorkloadPolicies (read by the first batch), the
        batch's templates and, where a batch binding's namespace has a WorkloadPolicy, where that
        namespace's bindings run, read after every earlier batch's write (the counts a policy shares must
        include them)."""
        if reads.clusters is None or reads.policies is None:
            with self.uow() as session:
                reads.load(session)
        assert reads.clusters is not None and reads.policies is not None
        namespaces = reads.policy_namespaces() & {
            str((b.get("metadata") or {}).get("namespace") or "") for b in bindings
        }
        quota = QuotaLedger()
        if namespaces:
            writes.wait()
            with self.uow() as session:
                quota = ledger_of(placed_bindings(session, namespaces))
        return CycleState(list(reads.clusters), reads.policies, claimed.templates, quota, memo=reads.memo)

    def _write_batch(self, pending: Sequence[Pending]) -> int:
        written = self._write_all(pending)
        self._requeue_quota_sharers(pending)
        return written

    def _failed(self, item: claims.Claim, failed: isolation.Failed) -> None:
        """Back the binding off (its claim columns) and say why on it."""
        now = self.clock.now()
        backoff = claims.Backoff(self.backoff_initial_seconds, self.backoff_max_seconds)
        with self.uow() as session:
            claims.fail(session, ResourceBindingRow, item, self.identity, now, backoff)
            involved = InvolvedObject(item.kind, item.name, item.namespace, item.uid)
            isolation.record_failure(
                session, involved, failed, reason="ScheduleBindingFailed", source=EVENT_SOURCE, now=now
            )

    def _decide_binding(
        self, item: claims.Claim, stored: Any, binding: Manifest, state: CycleState
    ) -> Pending | None:
        """What to write for one binding (None: suspended, nothing to write), decided in memory."""
        if planner.scheduling_suspended(binding):
            return None
        policy = planner.workload_policy_key(self._workload_policy(binding, state))
        trigger = planner.scheduling_trigger(binding, planner.gone_clusters(binding, state.live), policy)
        if trigger is None:
            return Pending(item, stored, binding, planner.sync_observed_generation, None)
        result = self._decide(binding, state)
        planner.record_quota(state.quota, binding, policy, result)
        now = self.clock.now()
        return Pending(
            item,
            stored,
            binding,
            lambda current: planner.apply_result(current, result, now, trigger, policy),
            result,
            policy,
        )

    @staticmethod
    def _workload_policy(binding: Manifest, state: CycleState) -> WorkloadPolicy | None:
        uid = str(((binding.get("spec") or {}).get("resource") or {}).get("uid") or "")
        return planner.workload_policy_for(state.templates.get(uid), state.workload_policies)

    def _decide(self, binding: Manifest, state: CycleState) -> ScheduleResult:
        uid = str(((binding.get("spec") or {}).get("resource") or {}).get("uid") or "")
        try:
            template = state.templates.get(uid)
            given = planner.binding_input(
                binding, template, state.workload_policies, state.quota, state.clusters
            )
            result = engine.schedule(given, state.clusters, self.config, self.extenders, memo=state.memo)
            # kube-scheduler's bind verb: told before the write; its error keeps the binding unscheduled
            # (SchedulerError, retried with back-off).
            result = extenders_bind(given, result, self.extenders)
        except Exception as exc:  # a bad binding or an engine bug must not stop the other bindings
            log.exception("scheduling %s failed", _key(binding))
            return _scheduler_error(binding, f"scheduling failed: {exc}")
        state.clusters = engine.assume(state.clusters, result, given.resource_request, given.previous)
        return result

    def _requeue_quota_sharers(self, pending: Sequence[Pending]) -> None:
        """A decision that took replicas off a cluster freed quota of its WorkloadPolicy: queue the other
        workloads under that policy, so one its counts left short takes it (``WorkloadPolicyQuotaShort``).
        Nothing to do, and no query, when no decision freed any."""
        freeing = [
            p
            for p in pending
            if p.workload_policy and p.result is not None and planner.frees_quota(p.binding, p.result)
        ]
        if not freeing:
            return
        # A short one decided earlier in this batch is queued too: it saw the quota still held.
        freed = {(str(p.binding["metadata"].get("namespace") or ""), p.workload_policy) for p in freeing}
        decided = [p.item.id for p in freeing]
        with self.uow() as session:
            ids: set[int] = set()
            for namespace, key in sorted(freed):
                ids.update(
                    requeue.bindings_under_workload_policy(
                        session, namespace, key, APPLIED_WORKLOAD_POLICY_ANNOTATION, exclude=decided
                    )
                )
            claims.mark_dirty(session, ResourceBindingRow, sorted(ids))

    # -- writes ---------------------------------------------------------------------------------------

    def _write_all(self, pending: Sequence[Pending]) -> int:
        """Write the batch's decisions in one transaction; if that fails, one transaction per binding
        (so one binding that cannot be written, or a race with another writer, costs only itself)."""
        if not pending:
            return 0
        try:
            with self.uow() as session:
                return self._store_batch(session, pending, self.clock.now())
        except isolation.OUTAGE:
            raise
        except Exception as exc:
            log.info(
                "scheduler: batch write of %d bindings failed (%s); writing one by one", len(pending), exc
            )
        return sum(self._write_one(p) for p in pending)

    def _write_one(self, pending: Pending) -> int:
        try:
            return self._write(pending.item, pending.binding, pending.render, pending.result)
        except isolation.OUTAGE:
            raise
        except Exception as exc:
            self._failed(pending.item, isolation.Failed(exc))
            return 0

    def _store_batch(self, session: Session, pending: Sequence[Pending], now: datetime) -> int:
        """Every binding of the batch written as column values from the rows the cycle read
        (``binding_writes``: a fixed handful of statements, each row checked against the version it was
        read at); decisions, events and claim releases as a few statements for the whole batch. Raises on
        any failure, a binding changed since it was read included (the caller falls back)."""
        rewrites: list[binding_writes.Rewrite] = []
        renders: list[tuple[Pending, int, Manifest]] = []
        for p in pending:
            current = view(p.stored)  # ``render`` builds a new manifest, this one stays as read
            written = p.render(current)
            explanation = (written.get("status") or {}).get(planner.EXPLANATION_KEY) or {}
            written["status"] = planner.stored_status(written.get("status") or {})
            if _spec_or_annotations_differ(current, written):
                generation = binding_writes.next_generation(p.stored, written)
                written["metadata"]["generation"] = generation
                if p.result is not None and p.result.succeeded:
                    written["status"]["schedulerObservedGeneration"] = generation
            rewrites.append(binding_writes.Rewrite(p.stored, written))
            renders.append((p, int(current.get("spec") != written.get("spec")), explanation))
        stored = binding_writes.rewrite(session, rewrites, now)
        decided = [
            (w, p.result, e) for (p, _, e), w in zip(renders, stored, strict=True) if p.result is not None
        ]
        _record_many(session, decided, now)
        done: list[claims.Claim] = []
        retry: dict[datetime, list[claims.Claim]] = {}
        for (p, own_bumps, _), written in zip(renders, stored, strict=True):
            if p.result is not None and p.result.avoid_ignored:
                budget_records.clear_avoid_list(session, written, now, self.clock.now)
            # Our own spec write queued the binding once more; only a change by someone else may.
            seen = dataclasses.replace(p.item, dirty_seq=p.item.dirty_seq + own_bumps)
            retry_at = self._retry_at(session, written, p.result, now)
            if retry_at is None:
                done.append(seen)
            else:
                retry.setdefault(retry_at, []).append(seen)
        claims.release(session, ResourceBindingRow, done, self.identity, done=True)
        for retry_at, items in retry.items():
            claims.release(session, ResourceBindingRow, items, self.identity, done=False, retry_at=retry_at)
        return len(stored)

    def _write(
        self,
        item: claims.Claim,
        loaded: Manifest,
        render: Callable[[Manifest], Manifest],
        result: ScheduleResult | None,
    ) -> int:
        now = self.clock.now()
        try:
            with self.uow() as session:
                own_bumps = self._store(session, loaded, render, result, now)
                if own_bumps is None:
                    claims.release(
                        session, ResourceBindingRow, [item], self.identity, done=False, retry_at=now
                    )
                    return 0
                retry_at = self._retry_at(session, loaded, result, now)
                # Our own spec write queued the binding once more; only a change by someone else may.
                seen = dataclasses.replace(item, dirty_seq=item.dirty_seq + own_bumps)
                claims.release(
                    session,
                    ResourceBindingRow,
                    [seen],
                    self.identity,
                    done=retry_at is None,
                    retry_at=retry_at,
                )
        except (Conflict, NotFound) as exc:
            log.info("scheduler: %s changed while it was scheduled (%s); retrying", _key(loaded), exc)
            self._release(item, done=False, retry_at=now)
            return 0
        return 1

    def _store(
        self,
        session: Session,
        loaded: Manifest,
        render: Callable[[Manifest], Manifest],
        result: ScheduleResult | None,
        now: datetime,
    ) -> int | None:
        """Write the decision; None when it was made for an older generation, else how many times the
        write itself queued the binding (1 when ``spec`` changed: see ``derive``)."""
        meta = loaded["metadata"]
        namespace, name = meta.get("namespace") or "", meta["name"]
        repo = BindingRepository(session, clock=self.clock.now).objects(namespace)
        current = repo.get(namespace, name)
        if current is None:
            raise NotFound(loaded["kind"], namespace, name)
        if current["metadata"].get("generation") != meta.get("generation"):
            return None  # decided for an older spec; the newer one is queued already
        written = render(current)
        explanation = (written.get("status") or {}).get(planner.EXPLANATION_KEY) or {}
        written["status"] = planner.stored_status(written.get("status") or {})
        own_bumps = int(current.get("spec") != written.get("spec"))
        if _spec_or_annotations_differ(current, written):
            stored = repo.replace(written)
            written["metadata"]["generation"] = stored["metadata"]["generation"]
            if result is not None and result.succeeded:
                written["status"]["schedulerObservedGeneration"] = stored["metadata"]["generation"]
        repo.update_status(namespace, name, written.get("status"))
        if result is not None:
            _record_many(session, [(written, result, explanation)], now)
        if result is not None and result.avoid_ignored:
            # Only the clusters the workload already failed on could take it: its tried list goes.
            budget_records.clear_avoid_list(session, written, now, self.clock.now)
        return own_bumps

    def _retry_at(
        self, session: Session, binding: Manifest, result: ScheduleResult | None, now: datetime
    ) -> datetime | None:
        if result is None or result.result not in RETRIED:
            return None
        failures = consecutive_failures(session, str(binding["metadata"].get("uid") or ""))
        return now + timedelta(seconds=self.backoff(failures))

    def backoff(self, failures: int) -> float:
        """Seconds before the retry after the ``failures``-th consecutive failed attempt (1-based)."""
        exponent = min(max(failures - 1, 0), 32)
        return float(min(self.backoff_max_seconds, self.backoff_initial_seconds * 2**exponent))

    def _release(self, item: claims.Claim, *, done: bool, retry_at: datetime | None = None) -> None:
        with self.uow() as session:
            claims.release(session, ResourceBindingRow, [item], self.identity, done=done, retry_at=retry_at)


# -- reads ------------------------------------------------------------------------------------------------


@dataclass
class PassReads:
    """What one pass reads once for all of its batches: the clusters (``snapshots`` keeps them from pass to
    pass, so an unchanged cluster is the same snapshot and its per-cluster results carry over in ``memo``)
    and the WorkloadPolicies. A pass is at most ``max_batches`` batches, about a second: a cluster or a
    WorkloadPolicy written meanwhile queues the bindings it affects again, for the next pass."""

    snapshots: SnapshotCache
    memo: CycleMemo = field(default_factory=CycleMemo)
    clusters: list[ClusterSnapshot] | None = None
    policies: list[Manifest] | None = None

    def load(self, session: Session) -> None:
        """The clusters and the WorkloadPolicies: one query each."""
        self.clusters = self.snapshots.load(session)
        self.policies, _ = ObjectRepository(session, "WorkloadPolicy", WORKLOAD_POLICY_API_VERSION).list()

    def policy_namespaces(self) -> set[str]:
        return {str((p.get("metadata") or {}).get("namespace") or "") for p in self.policies or ()}


@dataclass(frozen=True)
class Claimed:
    """A batch as claimed: each claim with its row as the claim returned it, and the batch's templates."""

    rows: list[tuple[claims.Claim, Any]]
    templates: dict[str, Manifest]


def consecutive_failures(session: Session, binding_uid: str, horizon: int = 32) -> int:
    """How many of the latest decisions in a row were retried failures (the one just recorded included)."""
    count = 0
    for decision in DecisionRepository(session).history(binding_uid=binding_uid, limit=horizon):
        if decision.result not in RETRIED:
            break
        count += 1
    return count


def _requeue_affected(session: Session, cluster_ids: Sequence[int]) -> int:
    changed = cluster_snapshots(session, cluster_ids)
    ids = set(requeue.bindings_targeting(session, [c.name for c in changed]))
    for candidate in requeue.sensitive_bindings(session):
        if candidate.id not in ids and any(planner.affected_by(candidate.placement, c) for c in changed):
            ids.add(candidate.id)
    claims.mark_dirty(session, ResourceBindingRow, sorted(ids))
    return len(ids)


# -- writes -----------------------------------------------------------------------------------------------


def _spec_or_annotations_differ(current: Manifest, written: Manifest) -> bool:
    annotations = (current["metadata"].get("annotations") or {}) != (
        written["metadata"].get("annotations") or {}
    )
    return annotations or current.get("spec") != written.get("spec")


def _record_many(
    session: Session, decided: Sequence[tuple[Manifest, ScheduleResult, Manifest]], now: datetime
) -> None:
    """The decision records and Karmada's Scheduled events of written bindings: one INSERT and one
    upsert for the lot."""
    if not decided:
        return
    DecisionRepository(session).append_many([_decision(b, r, e, now) for b, r, e in decided])
    events = []
    for binding, result, _ in decided:
        type_, reason, message = planner.event_of(result)
        events.append(EventEntry(InvolvedObject.of(binding), type_, reason, message))
    EventRepository(session).record_many(events, now=now, source=EVENT_SOURCE)


def _decision(binding: Manifest, result: ScheduleResult, explanation: Manifest, now: datetime) -> Decision:
    meta = binding["metadata"]
    return Decision(
        binding_uid=str(meta.get("uid") or ""),
        binding_kind=binding["kind"],
        binding_namespace=meta.get("namespace") or "",
        binding_name=meta["name"],
        binding_generation=meta.get("generation"),
        result=result.result,
        message=result.message,
        clusters=planner.target_entries(result),
        explanation=explanation,
        created_at=now,
    )


def _scheduler_error(binding: Manifest, message: str) -> ScheduleResult:
    kept = tuple(TargetCluster(n, r) for n, r in sorted(planner.previous_clusters(binding).items()))
    return ScheduleResult(kept, "SchedulerError", message)


def _key(binding: Manifest) -> str:
    meta = binding.get("metadata") or {}
    return f"{binding.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')}"
