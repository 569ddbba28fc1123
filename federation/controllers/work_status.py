"""Work status collection (push mode): Karmada's work-status controller, by member watches.

Every applied Work on a Push-mode cluster gets ``status.manifestStatuses[{identifier, status, health}]``
from the member's copies of its manifests (``status_interpreter``). Pull-mode clusters report their own
status through their agent.

Invariants:
- A member is read by informers (``status_watches``): one LIST, then a WATCH, per kind its Works carry
  (``karmada.io/managed=true``, every namespace), so a round costs no member call and evaluates only the
  Works whose member objects changed, that were (re)read from the database, or that were left pending.
  An informer's change wakes the collector (``wake_with``); the interval is the safety net.
- A member whose client cannot watch, or that refuses to list or watch a kind, is read by rounds of paged
  LISTs instead (``status_sightings``; the setting ``members.status_watch: false`` makes every member so),
  one per kind per round, and one GET per object of a kind it will not list. A connectivity failure skips
  the rest of that cluster's round; its Works keep the status they had.
- A Work is written only when its manifest statuses changed; the write merges them into the Work's
  *current* status (re-read in the writing transaction), so an ``Applied`` condition written meanwhile by
  work sync is never overwritten. A round writes ``WRITE_CHUNK`` Works per transaction (each is held
  whole while written); a concurrent write makes its transaction fail as a whole, and the next round
  repeats those Works (collection is idempotent; the change feed stays put). The statuses go as column
  values from Core rows (``status_writes.write_works``: no ORM object, no manifest hash recomputed).
- A member object that is missing although its Work is applied (someone deleted it on the member) queues
  the Work for sync, which recreates it — Karmada's ``recreateResourceIfNeeded``.
- The Works are not read whole every round: the collector keeps what a round needs of each applied Work
  (``Tracked``; the manifests' identities once per distinct tuple, shared by a template's Works) and
  reads only the Works written since its last read (``change_feed`` over
  ``updated_at``), with a full read at start and every resync. A Work deleted without a write first (its
  cluster unjoined) is dropped with its cluster, or when the round finds it gone. Only changes are written.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from federation.controllers import rendering
from federation.controllers.batch_pipeline import chunks
from federation.controllers.change_feed import ChangeFeed
from federation.controllers.members_access import MemberAccess
from federation.controllers.runtime import Clock, Outcome
from federation.controllers.status_sightings import (
    Identity,
    Kind,
    Observed,
    Sightings,
    Tracked,
    digest,
    get_object,
    interned,
    kind_of,
    list_kind,
)
from federation.controllers.status_watches import StatusWatches
from federation.members.client import MemberClient
from federation.members.errors import MemberError
from federation.members.informer import can_watch
from federation.members.pool import run_concurrently
from federation.shared_instances import SharedInstances
from federation.store import status_writes
from federation.store.applied_works import (
    WorkState,
    push_cluster_names,
    tracked_work_state_pages,
    work_stamps_since,
    work_states,
)
from federation.store.db import UnitOfWork
from federation.store.errors import Conflict
from federation.store.works import WorkRepository

log = logging.getLogger(__name__)

WORK_KIND = "Work"
# What an informer's change wakes (not an API kind: member objects changed).
MEMBER_OBJECTS = "MemberObject"
# Works whose statuses one transaction writes. A write holds each Work whole (its manifests) as read, as
# written and as its change-log event. At 10,000 bindings a round finds ~2,000 Works changed while the
# members converge; written at once, they took the process tens of MB higher for a moment, and pymalloc
# never gave those arenas back (long-lived objects allocated meanwhile pin them): the controllers' process
# ended the pipeline ~50 MB larger than with chunks of 250 (bench/RESULTS.md, stop 39).
WRITE_CHUNK = 250


@dataclass
class WorkStatusCollector:
    uow: UnitOfWork
    clock: Clock
    members: MemberAccess
    interval_seconds: float = 10.0
    name: str = "work-status"
    # Read members by watches (informers); False: rounds of LISTs (``members.status_watch``).
    watch_members: bool = True
    # Writes elsewhere do not make members' status change; an informer's change does (``wake_with``).
    watches: frozenset[str] = frozenset({MEMBER_OBJECTS})
    feed: ChangeFeed = field(default_factory=ChangeFeed)
    informed: StatusWatches = field(default_factory=StatusWatches)
    _tracked: dict[int, Tracked] = field(default_factory=dict)  # Work id → what a round needs of it
    # Cluster → how many tracked manifests of each kind: a round decides which informers run without
    # going over every tracked Work (woken by watches, rounds come often while members change).
    _kinds: dict[str, Counter[Kind]] = field(default_factory=dict)
    # One instance of each distinct manifests tuple: a template's Works on its clusters carry the same.
    _manifests: SharedInstances[tuple[Identity, ...]] = field(default_factory=SharedInstances)

    def wake_with(self, wake: Callable[[str], None]) -> None:
        """The runner's ``wake``: an informer that sees a member object change runs the next round now."""
        self.informed.notify = lambda: wake(MEMBER_OBJECTS)

    def close(self) -> None:
        """Stop the informers (the runner's stop hook)."""
        self.informed.close()

    def reconcile(self) -> Outcome:
        now = self.clock.now()
        fresh = self._refresh(now)
        if not self._tracked:
            self.informed.close()
            self.feed.commit(now)
            return Outcome()
        observed = self._observe(fresh)  # only what changed or is missing
        written, conflicted = 0, False
        for chunk in chunks(observed, WRITE_CHUNK):
            try:
                written += self._write(
                    [o for o in chunk if not o.missing], [o.work_id for o in chunk if o.missing]
                )
            except Conflict as exc:
                log.info("work status: a Work changed while writing (%s); next round retries", exc)
                self.informed.pending.update(o.work_id for o in chunk)
                conflicted = True
        if not conflicted:  # else the feed stays put: the next round reads the same Works again
            self.feed.commit(now)
        return Outcome.of(written, WORK_KIND)

    def _refresh(self, now: datetime) -> set[int]:
        """Bring the tracked Works up to date: the Works written since the last read (those the feed has
        not handed out at that version already: its own status writes and the window's re-reads are not
        read again), clusters gone. The ids of the Works read."""
        since = self.feed.since(now)
        read: set[int] = set()
        with self.uow() as session:
            if since is None:
                # Page by page: a page's manifest statuses are digested and dropped before the next is read.
                for page in tracked_work_state_pages(session):
                    self.feed.take((w.id, w.updated_at, w.id, w.resource_version) for w in page)
                    self._track_all(page, read)
            else:
                fresh = self.feed.take(work_stamps_since(session, since))
                self._track_all(work_states(session, [work_id for work_id, _ in fresh]), read)
            clusters = push_cluster_names(session)
        if since is None:  # a full read: what it did not find is not tracked any more
            for work_id in [i for i in self._tracked if i not in read]:
                self._forget(work_id)
        gone = set(self._kinds) - set(clusters)
        for work_id in [i for i, t in self._tracked.items() if t.cluster in gone] if gone else []:
            self._forget(work_id)
        return {work_id for work_id in read if work_id in self._tracked}

    def _track_all(self, states: Sequence[WorkState], read: set[int]) -> None:
        for state in states:
            self._track(state)
            read.add(state.id)

    def _track(self, state: WorkState) -> None:
        self._forget(state.id)
        if not state.tracked:
            return
        self._manifests.prune(len(self._tracked), lambda: (t.manifests for t in self._tracked.values()))
        manifests = self._manifests.share(tuple(Identity(*map(interned, e)) for e in state.manifests))
        tracked = Tracked(interned(state.cluster), manifests, digest(state.manifest_statuses))
        self._tracked[state.id] = tracked
        self._kinds.setdefault(tracked.cluster, Counter()).update(kind_of(i) for i in manifests)
        self.informed.index(state.id, tracked)

    def _forget(self, work_id: int) -> None:
        tracked = self._tracked.pop(work_id, None)
        if tracked is not None:
            kinds = self._kinds[tracked.cluster]
            kinds.subtract(kind_of(i) for i in tracked.manifests)
            if not +kinds:  # no manifest of the cluster is tracked any more
                del self._kinds[tracked.cluster]
            self.informed.unindex(work_id, tracked)

    def _observe(self, fresh: set[int]) -> list[Observed]:
        """What changed: the watched clusters' Works from their informers, the others' by LIST rounds."""
        clients = self.members.clients(list(self._kinds))  # every member's credentials in one read
        watched: dict[str, MemberClient] = {}
        refusing: set[str] = set()  # their informers stay, ended, so the refusal is not asked again
        for cluster, counted in self._kinds.items():
            client = clients[cluster]
            kinds = {kind for kind, count in counted.items() if count > 0}
            if not self.watch_members or isinstance(client, MemberError) or not can_watch(client):
                continue
            if self.informed.refused(cluster, kinds, client):  # type: ignore[arg-type]
                refusing.add(cluster)
                continue
            self.informed.ensure(cluster, client, kinds)  # type: ignore[arg-type]
            watched[cluster] = client
        self.informed.retain(set(watched) | refusing)
        due = fresh | self.informed.affected() | self.informed.pending
        evaluate = sorted(
            (work_id, tracked)
            for work_id in due
            if (tracked := self._tracked.get(work_id)) is not None and tracked.cluster in watched
        )
        observed = self.informed.observe(evaluate, watched)
        listed: dict[str, list[tuple[int, Tracked]]] = defaultdict(list)
        if len(watched) < len(self._kinds):  # the clusters read by LIST rounds: all their Works
            for work_id, work in self._tracked.items():
                if work.cluster not in watched:
                    listed[work.cluster].append((work_id, work))
        return observed + (self._list_rounds(listed, clients) if listed else [])

    def _list_rounds(
        self,
        by_cluster: dict[str, list[tuple[int, Tracked]]],
        clients: dict[str, MemberClient | MemberError],
    ) -> list[Observed]:
        settings = self.members.settings
        longest = max(len(ws) for ws in by_cluster.values())
        outcomes = run_concurrently(
            lambda cluster: self._list_cluster(cluster, clients[cluster], sorted(by_cluster[cluster])),
            by_cluster,
            max_workers=settings.max_concurrency,
            timeout=settings.request_timeout_seconds * (longest + 1),
        )
        return [seen for outcome in outcomes.values() if outcome.value for seen in outcome.value]

    def _list_cluster(
        self, cluster: str, client: MemberClient | MemberError, works: Sequence[tuple[int, Tracked]]
    ) -> list[Observed]:
        """The Works of ``cluster`` whose manifest statuses changed or whose objects are missing. A
        connectivity failure ends the cluster's round: the Works observed whole before it still count."""
        sightings = Sightings(works)
        try:
            if isinstance(client, MemberError):
                raise client
            for kind in sorted(sightings.kinds()):
                if not list_kind(client, kind, sightings):
                    for slot, identity in sightings.wanted(kind):
                        sightings.resolve(slot, get_object(client, identity))
        except MemberError as err:
            log.info("work status: cluster %s skipped this round: %s", cluster, err)
        return sightings.outcomes()

    def _write(self, changed: Sequence[Observed], missing: Sequence[int]) -> int:
        """The changed manifest statuses by one UPDATE (``status_writes``, from Core rows; a Work written
        since it was read fails the transaction with ``Conflict``, retried next round), the missing objects
        queued for sync."""
        if not changed and not missing:
            return 0
        with self.uow() as session:
            now = self.clock.now()  # as every controller's writes are stamped: the change feeds compare them
            works = WorkRepository(session, clock=self.clock.now)
            rows = status_writes.read_works(session, [o.work_id for o in changed] + list(missing))
            new_statuses: dict[int, dict[str, Any]] = {}
            for seen in changed:
                row = rows.get(seen.work_id)
                if row is None or (row.metadata_extra or {}).get(rendering.DELETION_TIMESTAMP):
                    self._forget(seen.work_id)  # gone, or going: the next read says which
                    continue
                new_statuses[row.id] = {**(row.status or {}), "manifestStatuses": list(seen.statuses)}
            stamps = status_writes.write_works(session, rows, new_statuses, now)
            for work_id in [i for i in missing if i not in rows]:
                self._forget(work_id)  # deleted without a write we could have read
            works.mark_ids_need_sync([i for i in missing if i in rows])
        # Committed: what it wrote is what it tracks, and the feed need not hand these Works back.
        statuses = {o.work_id: o.statuses for o in changed}
        for work_id, _, _ in stamps:
            tracked = self._tracked.get(work_id)
            if tracked is not None:
                self._tracked[work_id] = Tracked(
                    tracked.cluster, tracked.manifests, digest(statuses[work_id])
                )
        self.feed.own(stamps)
        return len(changed) + len(missing)
