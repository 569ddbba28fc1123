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
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
from federation.store.applied_works import WorkState, push_cluster_names, works_changed_since
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


@dataclass(frozen=True, slots=True)
class Tracked:
    """What a round needs of one applied Work: its cluster, its manifests (identity only, what
    ``manifest_status`` reads of them) and the digest of its stored manifest statuses."""

    cluster: str
    manifests: tuple[dict[str, Any], ...]
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
        self._refresh()
        if not self._tracked:
            return Outcome()
        works = sorted(self._tracked.items(), key=lambda item: (item[1].cluster, item[0]))
        observed = self._observe(works)
        changed = [
            o for o in observed if not o.missing and digest(o.statuses) != self._tracked[o.work_id].digest
        ]
        missing = [o.work_id for o in observed if o.missing]
        try:
            written = self._write(changed, missing)
        except Conflict as exc:
            log.info("work status: a Work changed while writing (%s); next round retries", exc)
            return Outcome()
        return Outcome.of(written, WORK_KIND)

    def _refresh(self) -> None:
        """Bring the tracked Works up to date: the Works written since the last read, clusters gone."""
        now = self.clock.now()
        since = self.feed.since(now)
        with self.uow() as session:
            changed = works_changed_since(session, since)
            clusters = push_cluster_names(session)
        if since is None:
            self._tracked.clear()
        for state in changed:
            self._track(state)
        for work_id in [i for i, t in self._tracked.items() if t.cluster not in clusters]:
            del self._tracked[work_id]
        self.feed.saw(state.updated_at for state in changed)
        self.feed.commit(now)

    def _track(self, state: WorkState) -> None:
        if not state.tracked:
            self._tracked.pop(state.id, None)
            return
        manifests = tuple(_identity(m) for m in state.manifests)
        self._tracked[state.id] = Tracked(state.cluster, manifests, digest(state.manifest_statuses))

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
        found: list[Observed] = []
        try:
            if isinstance(client, MemberError):
                raise client
            kinds = {_kind_of(m) for _, work in works for m in work.manifests}
            on_member = {kind: _listed(client, kind) for kind in sorted(kinds)}
            for work_id, work in works:
                manifests = work.manifests
                objects = [_find(client, on_member[_kind_of(m)], m) for m in manifests]
                statuses = tuple(
                    manifest_status(m, i, o) for i, (m, o) in enumerate(zip(manifests, objects, strict=True))
                )
                found.append(Observed(work_id, statuses, missing=any(o is None for o in objects)))
        except MemberError as err:
            log.info("work status: cluster %s skipped this round: %s", cluster, err)
        return found

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
        return len(changed) + len(missing)


def digest(statuses: Sequence[Any]) -> bytes:
    """Manifest statuses compared by a digest of their canonical JSON (a tracked Work keeps 16 bytes, not
    its statuses)."""
    try:
        text = orjson.dumps(list(statuses), option=orjson.OPT_SORT_KEYS)
    except TypeError:  # what orjson refuses, the standard library's rules (as ``jsoncodec``)
        text = json.dumps(list(statuses), sort_keys=True).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def _identity(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What ``manifest_status`` and the member lookup read of a manifest."""
    meta = manifest.get("metadata") or {}
    kept = {k: meta[k] for k in ("namespace", "name") if k in meta}
    return {"apiVersion": manifest.get("apiVersion"), "kind": manifest.get("kind"), "metadata": kept}


Kind = tuple[str, str]  # (apiVersion, kind)
LIST_REFUSED = frozenset({403, 404, 405})  # no list verb, no LIST route: read the objects one by one
Listed = dict[tuple[str, str], dict[str, Any]] | None  # (namespace, name) → object; None: LIST refused


def _kind_of(manifest: Mapping[str, Any]) -> Kind:
    return str(manifest.get("apiVersion")), str(manifest.get("kind"))


def _listed(client: MemberClient, kind: Kind) -> Listed:
    """The member's managed objects of ``kind`` by (namespace, name); None when it will not list them (the
    caller GETs them one by one). Connectivity failures propagate: the cluster is skipped this round."""
    try:
        items = client.list_labelled(kind[0], kind[1], f"{MANAGED_LABEL}=true")
    except MemberError as err:
        if err.status not in LIST_REFUSED:
            raise
        log.info("work status: %s refuses to list %s (%s); reading them one by one", client.name, kind, err)
        return None
    return {(str(o["metadata"].get("namespace") or ""), str(o["metadata"]["name"])): o for o in items}


def _find(client: MemberClient, listed: Listed, manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    meta = manifest.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name"))
    if listed is None:
        found: dict[str, Any] | None = client.get(
            str(manifest.get("apiVersion")), str(manifest.get("kind")), meta.get("namespace"), name
        )
        return found
    # A namespaced manifest without a namespace was applied to "default" (as kubectl would).
    return listed.get((namespace, name)) or (None if namespace else listed.get(("default", name)))
