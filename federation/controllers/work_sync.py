"""Work sync (push mode): Karmada's execution controller. Applies queued Works to their member clusters,
deletes the member objects of tombstoned Works, and records the `Applied` condition.

Invariants:
- Only Works with `needs_sync` on Push-mode clusters are claimed (`works.claim_for_push`); a Pull-mode
  cluster's agent does the same job for its own Works.
- Member I/O runs outside any transaction: claim (one transaction), talk to members concurrently
  across clusters with bounded workers (`pool.run_concurrently`), record results (one transaction for
  the batch, its statuses by one UPDATE; one transaction per result when a Work changed meanwhile). On
  Postgres the next batch is claimed and the previous one recorded while a batch's member I/O runs.
  Within one cluster up to ``members.applies_in_flight_per_cluster`` Works are synced at once (lanes,
  ``ClusterLanes``); a connectivity failure (unreachable, timeout, no credentials) fails that cluster's
  remaining Works at once instead of paying one timeout each.
- A tombstoned Work (`metadata.deletionTimestamp`) is deleted from the member (unless
  `preserveResourcesOnDeletion`), then its row is removed — only if it is still tombstoned when the
  results are recorded (the execution controller may have revived it meanwhile). A Work whose cluster no
  longer exists is removed without member I/O.
- `Applied` uses Karmada's wording: True `AppliedSuccessful` "Manifest has been successfully applied";
  False `AppliedFailed` "Failed to apply all manifests (k/n): <errors>". A suspended Work gets
  `Dispatching` False `SuspendDispatching` and is not applied.
- Retries back off exponentially without a counter column: the next attempt waits as long as the Work has
  been failing (since `Applied` turned False, or since its tombstone), clamped to
  [retry_backoff_initial, retry_backoff_max]. Waits double: initial, initial, 2x, 4x, ...
- A successful apply also records the manifest statuses the member returned, so replicas show up before
  the next status collection (`work_status`). They are taken from the member's answer as it arrives; the
  answer itself (a whole member object, ~8 KB decoded) is not kept until the batch is recorded.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.controllers import conditions, isolation, rendering
from federation.controllers.batch_pipeline import BatchWrites, NextBatch
from federation.controllers.idle_gate import Probe
from federation.controllers.members_access import MemberAccess
from federation.controllers.runtime import Clock, Outcome
from federation.members.client import MemberClient
from federation.members.errors import MemberError
from federation.members.pool import run_concurrently
from federation.model.status_interpreter import manifest_status
from federation.model.work import CONDITION_APPLIED, CONDITION_DISPATCHING
from federation.store import changelog, claims, probes, status_writes
from federation.store.claims import Claim
from federation.store.db import UnitOfWork
from federation.store.derive import parse_timestamp
from federation.store.dialect import among
from federation.store.errors import Conflict
from federation.store.events import EventEntry, EventRepository, InvolvedObject
from federation.store.manifest import view
from federation.store.tables import ClusterRow, WorkRow
from federation.store.works import WorkRepository, WorkToSync, claim_for_push

log = logging.getLogger(__name__)

WORK_KIND = "Work"
APPLIED_SUCCESSFUL = "AppliedSuccessful"
APPLIED_FAILED = "AppliedFailed"
REASON_SYNC_FAILED = "SyncFailed"  # Karmada's EventReasonSyncWorkloadFailed
APPLIED_MESSAGE = "Manifest has been successfully applied"
SUSPEND_DISPATCHING = "SuspendDispatching"
SUSPEND_MESSAGE = "Work dispatching is in a suspended state."
# Failures after which talking to the cluster again in this pass is pointless.
CONNECTIVITY_FAILURES = frozenset({"unreachable", "timeout", "kubeconfig", "unauthorized"})
SERVICE_UNAVAILABLE = 503


@dataclass(frozen=True, slots=True)
class SyncTask:
    """One claimed Work, as the member I/O needs it."""

    claim: Claim
    cluster: str
    manifests: tuple[dict[str, Any], ...]
    delete: bool = False
    preserve: bool = False
    suspended: bool = False


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What happened to one task; ``statuses`` holds the manifest status of each applied manifest, from the
    member's copy of it (``manifest_status``)."""

    task: SyncTask
    errors: tuple[str, ...] = ()
    statuses: tuple[dict[str, Any], ...] = ()
    succeeded: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class Recorded:
    """What one task's outcome makes of its Work: deleted (its member object is gone), a new status, and
    when to try again (None: done)."""

    delete: bool = False
    status: dict[str, Any] | None = None
    retry_at: datetime | None = None


class ClusterUnreachable(Exception):
    """Stop working on one cluster for this pass: the task that hit it and the rest fail with ``error``."""

    def __init__(self, error: MemberError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class WorkSync:
    uow: UnitOfWork
    clock: Clock
    identity: str
    members: MemberAccess
    interval_seconds: float = 2.0
    batch_size: int = 100
    claim_seconds: float = 60.0
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 300.0
    name: str = "work-sync"
    watches: frozenset[str] = frozenset({WORK_KIND, "Cluster"})

    def pending(self) -> Probe:
        """The runner's idle probe: a Work this pass would claim (``claim_for_push``'s condition)."""
        return claims.claimable(WorkRow, self.clock.now(), where=[probes.push_works()])

    def reconcile(self) -> Outcome:
        """Batch after batch: claim, member I/O, record. On Postgres the next batch's claim and this batch's
        record run on threads of their own while the member I/O goes on (``batch_pipeline``): in sequence
        the members waited for the database a fifth of the pass."""
        overlap = self.uow.is_postgres()
        # Claims taken ahead on another thread are this pass's: renewed while it runs, forgotten after it.
        claim = functools.partial(self._claim, threading.get_ident())
        with (
            BatchWrites(overlap=overlap, thread_name="work-sync-record") as records,
            NextBatch(claim, prefetch=overlap, thread_name="work-sync-claim") as batches,
        ):
            tasks, gone = batches.take()
            while tasks:
                full = len(tasks) >= self.batch_size
                if full:
                    batches.start()  # the next batch: its Works are not this batch's, which stay claimed
                results = self._run(tasks, gone)
                records.submit(self._record, results, last=not full)
                if not full:
                    break
                tasks, gone = batches.take()
        return Outcome.of(records.written, WORK_KIND)

    # -- claim -----------------------------------------------------------------------------------------

    def _claim(self, holder: int) -> tuple[list[SyncTask], set[str]]:
        """Claimed Works as tasks, and the names of their clusters that no longer exist; the claims are
        held for thread ``holder`` (the pass's)."""
        with self.uow() as session:
            claimed = claim_for_push(
                session,
                self.identity,
                self.batch_size,
                self.clock.now(),
                self.claim_seconds,
                holder=holder,
            )
            # A task's manifests are only read (``apply`` sends a copy of what it changes).
            works = WorkRepository(session).to_sync([c.id for c in claimed])
            tasks = []
            for item in claimed:
                if item.id not in works:
                    continue
                try:
                    tasks.append(_task(item, works[item.id]))
                except Exception as exc:  # a malformed Work waits alone; the batch goes on
                    self._failed(session, item, isolation.Failed(exc))
            gone = {t.cluster for t in tasks} - _existing_clusters(session, {t.cluster for t in tasks})
        return tasks, gone

    # -- member I/O ------------------------------------------------------------------------------------

    def _run(self, tasks: Sequence[SyncTask], gone: set[str]) -> list[SyncResult]:
        by_cluster: dict[str, list[SyncTask]] = defaultdict(list)
        results: list[SyncResult] = []
        for task in tasks:
            if task.cluster in gone:
                results.append(_without_cluster(task))
            else:
                by_cluster[task.cluster].append(task)
        settings = self.members.settings
        longest = max((len(ts) for ts in by_cluster.values()), default=0)
        clients = self.members.clients(list(by_cluster))  # every member's credentials in one read
        outcomes = run_concurrently(
            lambda cluster: self._sync_cluster(clients[cluster], by_cluster[cluster]),
            by_cluster,
            max_workers=settings.max_concurrency,
            timeout=settings.request_timeout_seconds * (longest + 1),
        )
        for cluster, outcome in outcomes.items():
            results.extend(
                outcome.value if outcome.value is not None else _failed(by_cluster[cluster], outcome.error)
            )
        return results

    def _sync_cluster(
        self, client: MemberClient | MemberError, tasks: Sequence[SyncTask]
    ) -> list[SyncResult]:
        if isinstance(client, MemberError):
            return _failed(tasks, client)
        lanes = max(1, min(self.members.settings.applies_in_flight_per_cluster, len(tasks)))
        cluster = ClusterLanes(client, tasks)
        if lanes == 1:
            return cluster.run_lane(0, 1)
        with ThreadPoolExecutor(max_workers=lanes - 1, thread_name_prefix="work-sync-lane") as pool:
            others = [pool.submit(cluster.run_lane, lane, lanes) for lane in range(1, lanes)]
            done = cluster.run_lane(0, lanes)  # this thread is a lane too
            for future in others:
                done.extend(future.result())
        return done

    # -- record ----------------------------------------------------------------------------------------

    def _record(self, results: Sequence[SyncResult]) -> int:
        """Write the outcomes: all in one transaction, or, if a Work was written meanwhile by another
        controller, each in its own (a Conflict then costs only its own record, retried at once)."""
        now = self.clock.now()
        if not self._record_batch(results, now):
            self._record_each(results, now)
        self._say_apply_failures(results, now)
        return len(results)

    def _record_batch(self, results: Sequence[SyncResult], now: datetime) -> bool:
        """Every outcome in one transaction: statuses by one UPDATE (``status_writes.write_works``, from
        Core rows: each row checks the resourceVersion it was read at), deletions by one DELETE, claims by
        one UPDATE per retry time. False, with nothing written, when a Work changed meanwhile (the status
        collector wrote it)."""
        try:
            with self.uow() as session:
                rows = status_writes.read_works(session, [r.task.claim.id for r in results])
                statuses: dict[int, Any] = {}
                deleted: list[int] = []
                releases: dict[datetime | None, list[Claim]] = defaultdict(list)
                for result in results:
                    row = rows.get(result.task.claim.id)
                    if row is None:
                        continue  # deleted meanwhile: nothing to record, no claim to release
                    outcome = self._outcome(view(row), result, now)  # builds a new status; reads the row
                    if outcome.delete:
                        deleted.append(row.id)
                    elif outcome.status is not None:
                        statuses[row.id] = outcome.status
                    releases[outcome.retry_at].append(result.task.claim)
                # Stamped by the injected clock, as every controller write is (the change feeds compare them).
                status_writes.write_works(session, rows, statuses, self.clock.now())
                if deleted:
                    changelog.delete_returning(session, WorkRow, among(session, WorkRow.id, deleted))
                for retry_at, claimed in releases.items():
                    done = retry_at is None
                    claims.release(session, WorkRow, claimed, self.identity, done=done, retry_at=retry_at)
        except Conflict as lost:
            log.info("work sync: %s; recording the batch's outcomes one by one", lost)
            return False
        return True

    def _record_each(self, results: Sequence[SyncResult], now: datetime) -> None:
        for result in results:
            claim = result.task.claim
            try:
                with self.uow() as session:
                    work = WorkRepository(session).by_ids([claim.id]).get(claim.id)
                    if work is None:
                        continue  # deleted meanwhile: nothing to record, no claim to release
                    retry_at = self._record_one(session, work, result, now)
                    done = retry_at is None
                    claims.release(session, WorkRow, [claim], self.identity, done=done, retry_at=retry_at)
            except Conflict:
                log.info("work %s/%s changed while syncing; syncing again", claim.namespace, claim.name)
                with self.uow() as session:
                    claims.release(session, WorkRow, [claim], self.identity, done=False, retry_at=now)
            except isolation.OUTAGE:
                raise
            except Exception as exc:  # recording one outcome failed: back it off, record the others
                with self.uow() as session:
                    self._failed(session, claim, isolation.Failed(exc))

    def _say_apply_failures(self, results: Sequence[SyncResult], now: datetime) -> None:
        """Karmada's ``SyncFailed`` Warning on each Work whose apply failed, all in one upsert (a retry that
        fails the same way counts up the same event)."""
        said = [
            EventEntry(
                InvolvedObject(
                    r.task.claim.kind, r.task.claim.name, r.task.claim.namespace, r.task.claim.uid
                ),
                "Warning",
                REASON_SYNC_FAILED,
                failure_message(r),
            )
            for r in results
            if not r.ok and not r.task.delete and not r.task.suspended
        ]
        if said:
            with self.uow() as session:
                EventRepository(session).record_many(said, now=now, source=self.name)

    def _failed(self, session: Session, item: Claim, failed: isolation.Failed) -> None:
        now = self.clock.now()
        backoff = claims.Backoff(self.backoff_initial_seconds, self.backoff_max_seconds)
        claims.fail(session, WorkRow, item, self.identity, now, backoff)
        involved = InvolvedObject(item.kind, item.name, item.namespace, item.uid)
        isolation.record_failure(session, involved, failed, reason="SyncFailed", source=self.name, now=now)

    def _record_one(
        self, session: Session, work: dict[str, Any], result: SyncResult, now: datetime
    ) -> datetime | None:
        """Write the outcome of one task; the retry time when it must be tried again."""
        meta = work["metadata"]
        works = WorkRepository(session, clock=self.clock.now)
        outcome = self._outcome(work, result, now)
        if outcome.delete:
            works.objects.delete(meta["namespace"], meta["name"])
        elif outcome.status is not None:
            # With the version read: a status written meanwhile (the collector) is a Conflict, not lost.
            works.objects.update_status(
                meta["namespace"], meta["name"], outcome.status, expected_rv=meta["resourceVersion"]
            )
        return outcome.retry_at

    def _outcome(self, work: Mapping[str, Any], result: SyncResult, now: datetime) -> Recorded:
        """What the outcome of one task makes of its Work: deleted, a new status, when to retry."""
        meta = work["metadata"]
        if result.task.delete:
            if not result.ok:
                log.info(
                    "deleting %s/%s from its member failed: %s",
                    meta["namespace"],
                    meta["name"],
                    result.errors,
                )
                since = parse_timestamp(meta.get(rendering.DELETION_TIMESTAMP))
                return Recorded(retry_at=now + self._backoff(since, now))
            return Recorded(delete=rendering.is_tombstoned(work))
        status = dict(work.get("status") or {})
        retry_at = None
        if result.task.suspended:
            status["conditions"] = conditions.upsert(
                status.get("conditions"),
                CONDITION_DISPATCHING,
                False,
                SUSPEND_DISPATCHING,
                SUSPEND_MESSAGE,
                now,
            )
        elif result.ok:
            status["conditions"] = conditions.upsert(
                status.get("conditions"), CONDITION_APPLIED, True, APPLIED_SUCCESSFUL, APPLIED_MESSAGE, now
            )
            status["manifestStatuses"] = list(result.statuses)
        else:
            failing_since = conditions.false_since(status.get("conditions"), CONDITION_APPLIED)
            status["conditions"] = conditions.upsert(
                status.get("conditions"),
                CONDITION_APPLIED,
                False,
                APPLIED_FAILED,
                failure_message(result),
                now,
            )
            retry_at = now + self._backoff(failing_since, now)
        return Recorded(status=status, retry_at=retry_at)

    def _backoff(self, failing_since: datetime | None, now: datetime) -> timedelta:
        return timedelta(
            seconds=backoff_seconds(
                failing_since, now, self.backoff_initial_seconds, self.backoff_max_seconds
            )
        )


def backoff_seconds(failing_since: datetime | None, now: datetime, initial: float, maximum: float) -> float:
    """Wait as long as it has been failing, within [initial, maximum]: attempts at t0+i, +2i, +4i, ..."""
    elapsed = (now - failing_since).total_seconds() if failing_since else 0.0
    return min(maximum, max(initial, elapsed))


def failure_message(result: SyncResult) -> str:
    """Karmada's: "Failed to apply all manifests (k/n): err" (several errors in brackets)."""
    errors = result.errors
    joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f"Failed to apply all manifests ({result.succeeded}/{len(result.task.manifests)}): {joined}"


def _task(claim: Claim, work: WorkToSync) -> SyncTask:
    spec = work.spec
    manifests = tuple((spec.get("workload") or {}).get("manifests") or ())
    return SyncTask(
        claim=claim,
        cluster=rendering.cluster_of_namespace(work.namespace),
        manifests=manifests,
        delete=work.deleting,
        preserve=bool(spec.get("preserveResourcesOnDeletion")),
        suspended=bool(spec.get("suspendDispatching")),
    )


def _existing_clusters(session: Session, names: set[str]) -> set[str]:
    if not names:
        return set()
    return set(session.scalars(select(ClusterRow.name).where(ClusterRow.name.in_(names))))


def _without_cluster(task: SyncTask) -> SyncResult:
    if task.delete:
        return SyncResult(task)  # nothing left to clean up on a cluster that is gone
    return SyncResult(task, errors=(f"cluster {task.cluster!r} is not registered",))


def _failed(tasks: Sequence[SyncTask], error: BaseException | None) -> list[SyncResult]:
    message = str(error) if error is not None else "unknown error"
    return [SyncResult(t, errors=(message,)) for t in tasks]


class ClusterLanes:
    """One cluster's tasks spread over lanes that talk to the member at the same time (Karmada's execution
    controller syncs Works concurrently too, in no order). One request at a time paid a network round
    trip per Work and left the member idle while the client encoded and decoded: with members 20 ms away
    four lanes took the pipeline's applied phase from 55 to 17 s (bench/RESULTS.md, stop 32). Lane ``i``
    of ``n`` takes tasks ``i, i+n, ...``. A connectivity failure in any lane fails every task not yet
    started in every lane with that error (one timeout per cluster, not one per lane)."""

    def __init__(self, client: MemberClient, tasks: Sequence[SyncTask]) -> None:
        self.client = client
        self.tasks = tasks
        self._stopped: MemberError | None = None  # set once; read without a lock (a reference swap)

    def run_lane(self, lane: int, lanes: int) -> list[SyncResult]:
        done: list[SyncResult] = []
        mine = self.tasks[lane::lanes]
        for index, task in enumerate(mine):
            stopped = self._stopped
            if stopped is not None:
                done.extend(_failed(mine[index:], stopped))
                break
            try:
                done.append(_sync_one(self.client, task))
            except ClusterUnreachable as stop:
                self._stopped = stop.error
                done.extend(_failed(mine[index:], stop.error))
                break
        return done


def _sync_one(client: MemberClient, task: SyncTask) -> SyncResult:
    if task.delete:
        return _delete_from_member(client, task)
    if task.suspended:
        return SyncResult(task)
    return _apply_to_member(client, task)


def _apply_to_member(client: MemberClient, task: SyncTask) -> SyncResult:
    errors: list[str] = []
    statuses: list[dict[str, Any]] = []
    for ordinal, manifest in enumerate(task.manifests):
        observed: dict[str, Any] | None = None
        try:
            observed = client.apply(manifest)
        except MemberError as err:
            if _cluster_level(err):
                raise ClusterUnreachable(err) from err
            errors.append(str(err))
        except ValueError as err:  # a manifest the client refuses before sending it
            errors.append(str(err))
        statuses.append(manifest_status(manifest, ordinal, observed))  # not the object: it is dropped here
    succeeded = len(task.manifests) - len(errors)
    return SyncResult(task, errors=tuple(errors), statuses=tuple(statuses), succeeded=succeeded)


def _cluster_level(err: MemberError) -> bool:
    """A failure of the cluster rather than of one object (a member answering 503 to everything is down)."""
    return err.kind in CONNECTIVITY_FAILURES or err.status == SERVICE_UNAVAILABLE


def _delete_from_member(client: MemberClient, task: SyncTask) -> SyncResult:
    if task.preserve:
        return SyncResult(task)  # Karmada keeps the member objects (it only strips its own labels)
    errors: list[str] = []
    for manifest in task.manifests:
        meta = manifest.get("metadata") or {}
        try:
            client.delete(
                str(manifest.get("apiVersion")),
                str(manifest.get("kind")),
                meta.get("namespace"),
                str(meta.get("name")),
            )
        except MemberError as err:
            if _cluster_level(err):
                raise ClusterUnreachable(err) from err
            errors.append(str(err))
    return SyncResult(task, errors=tuple(errors))
