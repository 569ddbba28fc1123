"""Work status collection (push mode): Karmada's work-status controller, by polling instead of informers.

Every `status_interval_seconds` it reads, for the applied Works on each Push-mode cluster, the member's
copies of their manifests and records `status.manifestStatuses[{identifier, status, health}]`
(`status_interpreter`). Pull-mode clusters report their own status through their agent.

Invariants:
- A round costs the member one LIST per kind its Works carry (`karmada.io/managed=true`, every namespace,
  paged), not one GET per object: the cost follows the member's kinds, not the number of Works. A kind
  the member refuses to list (a LIST the API does not serve, or RBAC without `list`) falls back to one
  GET per object of that kind.
- Members are read concurrently across clusters with bounded workers; a connectivity failure skips the
  rest of that cluster for this round (its Works keep the status they had: a member we cannot reach
  tells us nothing new).
- A Work is written only when its manifest statuses changed; the write merges them into the Work's
  *current* status (re-read in the writing transaction), so an `Applied` condition written meanwhile by
  work sync is never overwritten. A concurrent write makes the round's transaction fail as a whole; the
  next round repeats it (collection is idempotent).
- A member object that is missing although its Work is applied (someone deleted it on the member) queues
  the Work for sync, which recreates it — Karmada's `recreateResourceIfNeeded`.
- The Works are not read whole every round: the collector keeps what a round needs of each applied
  Work (its cluster, its manifests' identities, a digest of its stored manifest statuses) and reads only
  the Works written since its last read (``change_feed`` over ``updated_at``; every status write, apply,
  tombstone and spec change sets it), with a full read at start and every resync. A Work deleted without
  a write first (its cluster unjoined) is dropped with its cluster, or when the round finds it gone; a
  round at idle reads no Work. Only changes are written.
- Memory stays flat in the number of Works: a tracked Work keeps its cluster, one ``Identity`` tuple per
  manifest (strings interned: the Works of one template share them) and a 16-byte digest (~0.3 KB, was
  ~0.8 KB with a dict per manifest); a member's LIST is matched a page at a time (``visit_labelled``)
  and a round keeps only the statuses that changed, so neither a member's objects (~8 KB each decoded)
  nor every Work's statuses are ever all in memory at once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from sqlalchemy.orm.exc import StaleDataError

from federation.controllers import rendering
from federation.controllers.change_feed import ChangeFeed
from federation.controllers.members_access import MemberAccess
from federation.controllers.rendering import MANAGED_LABEL
from federation.controllers.runtime import Clock, Outcome
from federation.members.client import MemberClient
from federation.members.errors import MemberError
from federation.members.pool import run_concurrently
from federation.model.status_interpreter import manifest_status
from federation.store import bulkflush
from federation.store.applied_works import (
    WorkState,
    push_cluster_names,
    tracked_work_states,
    work_stamps_since,
    work_states,
)
from federation.store.db import UnitOfWork
from federation.store.errors import Conflict
from federation.store.tables import WorkRow
from federation.store.works import WorkRepository, carries_secret

log = logging.getLogger(__name__)

WORK_KIND = "Work"


@dataclass(frozen=True, slots=True)
class Observed:
    """What one round saw for one Work: its manifest statuses, or that an object is missing."""

    work_id: int
    statuses: tuple[dict[str, Any], ...]
    missing: bool


class Identity(NamedTuple):
    """What ``manifest_status`` and the member lookup read of a manifest (None: the field is absent)."""

    api_version: Any
    kind: Any
    namespace: Any
    name: Any

    @staticmethod
    def of(manifest: Mapping[str, Any]) -> Identity:
        meta = manifest.get("metadata") or {}
        return Identity(
            _interned(manifest.get("apiVersion")),
            _interned(manifest.get("kind")),
            _interned(meta.get("namespace")),
            _interned(meta.get("name")),
        )

    def manifest(self) -> dict[str, Any]:
        """The manifest as far as its identity goes (what ``manifest_status`` is given)."""
        meta = {k: v for k, v in (("namespace", self.namespace), ("name", self.name)) if v is not None}
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta}


@dataclass(frozen=True, slots=True)
class Tracked:
    """What a round needs of one applied Work: its cluster, its manifests (identity only) and the digest
    of its stored manifest statuses."""

    cluster: str
    manifests: tuple[Identity, ...]
    digest: bytes


@dataclass
class WorkStatusCollector:
    uow: UnitOfWork
    clock: Clock
    members: MemberAccess
    interval_seconds: float = 10.0
    name: str = "work-status"
    # Polling: writes elsewhere do not make members' status change any sooner.
    watches: frozenset[str] = frozenset()
    feed: ChangeFeed = field(default_factory=ChangeFeed)
    _tracked: dict[int, Tracked] = field(default_factory=dict)  # Work id → what a round needs of it

    def reconcile(self) -> Outcome:
        now = self.clock.now()
        self._refresh(now)
        if not self._tracked:
            self.feed.commit(now)
            return Outcome()
        works = sorted(self._tracked.items(), key=lambda item: (item[1].cluster, item[0]))
        observed = self._observe(works)  # only what changed or is missing
        changed = [o for o in observed if not o.missing]
        missing = [o.work_id for o in observed if o.missing]
        try:
            written = self._write(changed, missing)
        except Conflict as exc:
            log.info("work status: a Work changed while writing (%s); next round retries", exc)
            return Outcome()  # the feed stays put: the next round reads the same Works again
        self.feed.commit(now)
        return Outcome.of(written, WORK_KIND)

    def _refresh(self, now: datetime) -> None:
        """Bring the tracked Works up to date: the Works written since the last read (those the feed has
        not handed out at that version already: its own status writes and the window's re-reads are not
        read again), clusters gone."""
        since = self.feed.since(now)
        with self.uow() as session:
            if since is None:
                changed = tracked_work_states(session)
                self.feed.take((w.id, w.updated_at, w.id, w.resource_version) for w in changed)
            else:
                fresh = self.feed.take(work_stamps_since(session, since))
                changed = work_states(session, [work_id for work_id, _ in fresh])
            clusters = push_cluster_names(session)
        if since is None:
            self._tracked.clear()
        for state in changed:
            self._track(state)
        for work_id in [i for i, t in self._tracked.items() if t.cluster not in clusters]:
            del self._tracked[work_id]

    def _track(self, state: WorkState) -> None:
        if not state.tracked:
            self._tracked.pop(state.id, None)
            return
        manifests = tuple(Identity.of(m) for m in state.manifests)
        cluster = _interned(state.cluster)
        self._tracked[state.id] = Tracked(cluster, manifests, digest(state.manifest_statuses))

    def _observe(self, works: Sequence[tuple[int, Tracked]]) -> list[Observed]:
        by_cluster: dict[str, list[tuple[int, Tracked]]] = defaultdict(list)
        for work_id, work in works:
            by_cluster[work.cluster].append((work_id, work))
        settings = self.members.settings
        longest = max(len(ws) for ws in by_cluster.values())
        clients = self.members.clients(list(by_cluster))  # every member's credentials in one read
        outcomes = run_concurrently(
            lambda cluster: self._observe_cluster(cluster, clients[cluster], by_cluster[cluster]),
            by_cluster,
            max_workers=settings.max_concurrency,
            timeout=settings.request_timeout_seconds * (longest + 1),
        )
        return [seen for outcome in outcomes.values() if outcome.value for seen in outcome.value]

    def _observe_cluster(
        self, cluster: str, client: MemberClient | MemberError, works: Sequence[tuple[int, Tracked]]
    ) -> list[Observed]:
        """The Works of ``cluster`` whose manifest statuses changed or whose objects are missing. A
        connectivity failure ends the cluster's round: the Works observed whole before it still count."""
        sightings = Sightings(works)
        try:
            if isinstance(client, MemberError):
                raise client
            for kind in sorted(sightings.kinds()):
                if not _list_kind(client, kind, sightings):
                    for slot, identity in sightings.wanted(kind):
                        sightings.resolve(slot, _get(client, identity))
        except MemberError as err:
            log.info("work status: cluster %s skipped this round: %s", cluster, err)
        return sightings.outcomes()

    def _write(self, changed: Sequence[Observed], missing: Sequence[int]) -> int:
        """The changed manifest statuses by one UPDATE (``bulkflush``; a Work written since it was read
        fails the round with ``Conflict``, retried next round), the missing objects queued for sync."""
        if not changed and not missing:
            return 0
        with self.uow() as session:
            # Stamped by the injected clock, as every controller's writes are: the change feeds compare them.
            works = WorkRepository(session, clock=self.clock.now)
            rows = works.rows_by_ids([o.work_id for o in changed] + list(missing))
            written: list[WorkRow] = []
            for seen in changed:
                row = rows.get(seen.work_id)
                if row is None or (row.metadata_extra or {}).get(rendering.DELETION_TIMESTAMP):
                    self._tracked.pop(seen.work_id, None)  # gone, or going: the next read says which
                    continue
                status = {**(row.status or {}), "manifestStatuses": list(seen.statuses)}
                if works.objects.update_status_loaded(row, status, flush=False):
                    written.append(row)
            try:
                # A Work carrying a Secret stays with the ORM's flush, whose hooks seal its data.
                bulkflush.flush_rows(session, [row for row in written if not carries_secret(row)])
                session.flush()
            except StaleDataError as exc:
                raise Conflict(WORK_KIND, "", "", "a Work changed while its status was written") from exc
            for work_id in [i for i in missing if i not in rows]:
                self._tracked.pop(work_id, None)  # deleted without a write we could have read
            works.mark_ids_need_sync([i for i in missing if i in rows])
            stamps = [(row.id, row.updated_at, row.resource_version) for row in written]
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


def digest(statuses: Sequence[Any]) -> bytes:
    """Manifest statuses compared by a digest of their canonical JSON (a tracked Work keeps 16 bytes, not
    its statuses)."""
    try:
        text = orjson.dumps(list(statuses), option=orjson.OPT_SORT_KEYS)
    except TypeError:  # what orjson refuses, the standard library's rules (as ``jsoncodec``)
        text = json.dumps(list(statuses), sort_keys=True).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def _interned(value: Any) -> Any:
    """Strings shared by many tracked Works (cluster, kind, namespace, a name on several clusters) once."""
    return sys.intern(value) if type(value) is str else value


Kind = tuple[str, str]  # (apiVersion, kind)
Slot = tuple[int, int]  # (index of the Work in the round, ordinal of the manifest)
LIST_REFUSED = frozenset({403, 404, 405})  # no list verb, no LIST route: read the objects one by one


def _kind_of(identity: Identity) -> Kind:
    return str(identity.api_version), str(identity.kind)


class Sightings:
    """One cluster's round: the member object of each manifest of its Works, matched a LIST page (or a
    GET) at a time, and what that makes of each Work. Keeps the manifest statuses found (small), never
    the member's objects."""

    def __init__(self, works: Sequence[tuple[int, Tracked]]) -> None:
        self._works = works
        self._statuses: list[list[dict[str, Any] | None]] = [[None] * len(w.manifests) for _, w in works]
        self._resolved: list[list[bool]] = [[False] * len(w.manifests) for _, w in works]
        # kind → (namespace, name) → slots: where a listed object goes. A manifest without a namespace is
        # looked up as given and, failing that, in "default" (where a namespaced kind was applied).
        self._exact: dict[Kind, dict[tuple[str, str], list[Slot]]] = defaultdict(lambda: defaultdict(list))
        self._fallback: dict[Kind, dict[tuple[str, str], list[Slot]]] = defaultdict(lambda: defaultdict(list))
        self._fallback_hits: dict[Slot, dict[str, Any]] = {}
        for index, (_, work) in enumerate(works):
            for ordinal, identity in enumerate(work.manifests):
                namespace, name = str(identity.namespace or ""), str(identity.name)
                self._exact[_kind_of(identity)][(namespace, name)].append((index, ordinal))
                if not namespace:
                    self._fallback[_kind_of(identity)][("default", name)].append((index, ordinal))

    def kinds(self) -> set[Kind]:
        return set(self._exact)

    def wanted(self, kind: Kind) -> list[tuple[Slot, Identity]]:
        return [(slot, self._identity(slot)) for slots in self._exact[kind].values() for slot in slots]

    def page(self, kind: Kind, objects: Sequence[Mapping[str, Any]]) -> None:
        """Match one LIST page of ``kind``; the objects are not kept, only their manifest statuses."""
        exact, fallback = self._exact[kind], self._fallback.get(kind, {})
        for obj in objects:
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace") or ""), str(meta.get("name")))
            for slot in exact.get(key, ()):
                self._set(slot, self._status(slot, obj))
            for slot in fallback.get(key, ()):
                self._fallback_hits[slot] = self._status(slot, obj)

    def listed(self, kind: Kind) -> None:
        """Every page of ``kind`` was matched: a manifest not listed as given takes its "default" sighting,
        if any; the rest are missing from the member."""
        for slots in self._exact[kind].values():
            for index, ordinal in slots:
                hit = self._fallback_hits.pop((index, ordinal), None)
                if self._statuses[index][ordinal] is None and hit is not None:
                    self._statuses[index][ordinal] = hit
                self._resolved[index][ordinal] = True

    def resolve(self, slot: Slot, obj: Mapping[str, Any] | None) -> None:
        """One manifest read by GET (None: not on the member)."""
        if obj is not None:
            self._set(slot, self._status(slot, obj))
        self._resolved[slot[0]][slot[1]] = True

    def outcomes(self) -> list[Observed]:
        """The Works seen whole (every manifest resolved) whose statuses changed or that miss an object."""
        found: list[Observed] = []
        for index, (work_id, work) in enumerate(self._works):
            if not all(self._resolved[index]):
                continue  # the round stopped before this Work was seen whole
            seen = self._statuses[index]
            statuses = tuple(
                status if status is not None else manifest_status(identity.manifest(), ordinal, None)
                for ordinal, (identity, status) in enumerate(zip(work.manifests, seen, strict=True))
            )
            missing = any(status is None for status in seen)
            if missing or digest(statuses) != work.digest:
                found.append(Observed(work_id, statuses, missing=missing))
        return found

    def _identity(self, slot: Slot) -> Identity:
        return self._works[slot[0]][1].manifests[slot[1]]

    def _status(self, slot: Slot, obj: Mapping[str, Any]) -> dict[str, Any]:
        return manifest_status(self._identity(slot).manifest(), slot[1], obj)

    def _set(self, slot: Slot, status: dict[str, Any]) -> None:
        self._statuses[slot[0]][slot[1]] = status


def _list_kind(client: MemberClient, kind: Kind, sightings: Sightings) -> bool:
    """Match the member's managed objects of ``kind`` a page at a time; False when it will not list them
    (the caller GETs them one by one). Connectivity failures propagate: the cluster is skipped this round."""
    try:
        client.visit_labelled(
            kind[0], kind[1], f"{MANAGED_LABEL}=true", lambda page: sightings.page(kind, page)
        )
    except MemberError as err:
        if err.status not in LIST_REFUSED:
            raise
        log.info("work status: %s refuses to list %s (%s); reading them one by one", client.name, kind, err)
        return False
    sightings.listed(kind)
    return True


def _get(client: MemberClient, identity: Identity) -> dict[str, Any] | None:
    found: dict[str, Any] | None = client.get(
        str(identity.api_version), str(identity.kind), identity.namespace, str(identity.name)
    )
    return found
