"""The execution controller (Karmada's binding controller, `ensureWork` + `removeOrphanWorks`): one Work
per target cluster of every scheduled binding, and tombstones for the Works no longer wanted.

Queueing (touch only rows that changed). A binding's claim columns belong to the scheduler
(`needs_scheduling`), so this controller does not use them. Instead two change feeds
(`change_feed.ChangeFeed`) find, by a `content_updated_at` watermark (every write but a status-only
one), the bindings written since the last pass
(new `spec.clusters`, eviction tasks, suspension...) and the bindings whose template was written (an image
change does not rewrite the binding). Those bindings are rendered (`rendering`, pure) and compared with
their Works; only differences are written, so a pass over unchanged rows writes nothing. A binding blocked
by a Directly-purged cluster is retried every pass until its old Work is gone. Where the feeds stand is
kept in the database (``feed_checkpoint``): a restart, or a new leader, resumes there instead of rendering
every binding again, and the full resync keeps its schedule.

Deletion propagates by tombstone, never by removing a row: a Work to delete (cluster dropped from the
placement, or orphaned because its binding was deleted) gets `metadata.deletionTimestamp` and is queued
for sync. Work sync (push) or the cluster's agent (pull) deletes the member objects and then the Work
row, so no member object outlives its Work unseen. Hand-made Works (no binding annotations) are left alone.

Each batch of bindings is one transaction: its bindings, templates and Works are loaded by a few
queries, and every Work write of the batch goes out in one flush (in a savepoint). Works are first read
as summaries (``WorkSummary``: everything but their manifests, which compare by the stored hash), and
only the Works the plan rewrites or tombstones are loaded whole: an unchanged Work costs no manifest
read, no write and no sync. Bindings and templates are read as views (no copies, no status): rendering
copies what it keeps, once per binding. If the batch write fails, each
binding's writes run in a savepoint of their own (``isolation``): a binding whose Works cannot be
rendered or written is rolled back alone, says why in a Warning event, and is retried with back-off
(``RetryBook``) or as soon as it or its template is written again; the others are committed and the
feeds move on. A failure outside the per-binding part (the
database) leaves the watermarks in place so the next pass sees the same bindings again.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from federation.controllers import isolation, rendering
from federation.controllers.batch_pipeline import chunks
from federation.controllers.change_feed import ChangeFeed
from federation.controllers.detector import TEMPLATE_KIND
from federation.controllers.feed_checkpoint import FeedCheckpoint
from federation.controllers.idle_gate import Probe
from federation.controllers.isolation import RetryBook
from federation.controllers.runtime import Clock, Outcome
from federation.store import bulkflush, probes, work_writes
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.dialect import among
from federation.store.errors import Conflict
from federation.store.events import InvolvedObject
from federation.store.manifest import format_timestamp, join, split
from federation.store.tables import ResourceBindingRow, WorkRow
from federation.store.templates import template_views_by_uid
from federation.store.works import WorkRepository, WorkSummary, carries_secret

log = logging.getLogger(__name__)

BINDING_KINDS = ("ResourceBinding", "ClusterResourceBinding")
WORK_KIND = "Work"
EVENT_SOURCE = "execution-controller"
# The annotations a rendered Work carries (``rendering.orphans_to_tombstone`` leaves other Works alone).
BINDING_ANNOTATIONS = frozenset(
    {
        rendering.BINDING_NAMESPACE_ANNOTATION,
        rendering.BINDING_NAME_ANNOTATION,
        rendering.CLUSTER_BINDING_NAME_ANNOTATION,
    }
)


@dataclass(frozen=True)
class Planned:
    """One binding's desired Works and the Works it has (or adopts), summarised in the batch's session."""

    binding_id: int
    binding: Mapping[str, Any]
    desired: list[dict[str, Any]]
    existing: list[WorkSummary]


@dataclass
class ExecutionController:
    uow: UnitOfWork
    clock: Clock
    interval_seconds: float = 1.0
    batch_size: int = 100
    name: str = "execution"
    watches: frozenset[str] = frozenset({*BINDING_KINDS, TEMPLATE_KIND})
    bindings_feed: ChangeFeed = field(default_factory=ChangeFeed)
    templates_feed: ChangeFeed = field(default_factory=ChangeFeed)
    retries: RetryBook = field(default_factory=RetryBook)
    # Bindings waiting for a Directly-purged Work to disappear (a deletion leaves no row to watch).
    _blocked: set[int] = field(default_factory=set)
    # Binding id → what its Works were rendered from when they were last brought in line (``_versions``:
    # one digest of its uid, the binding and its template): a binding the feeds show again for a write
    # that changed none of it (a status write) needs no rendering. The uid because a row id can be reused
    # by a recreated binding (SQLite). Emptied by every full resync, so the level-triggered safety net
    # still renders everything. 16 bytes a binding: kept for every binding (three hex strings were ~0.3 KB).
    _handled: dict[int, bytes] = field(default_factory=dict)
    # Where the feeds stand, in the database: a restart resumes there rather than rendering everything.
    checkpoint: FeedCheckpoint = field(default_factory=lambda: FeedCheckpoint("execution"))

    def pending(self) -> Probe:
        """The runner's idle probe: a binding blocked or due a retry, a full resync due, a binding or bound
        template written since the feeds' bounds, or an orphan Work to tombstone (its binding was deleted:
        no feed shows that)."""
        now = self.clock.now()
        bindings_since, templates_since = self.bindings_feed.bound(now), self.templates_feed.bound(now)
        if bindings_since is None or templates_since is None or self._blocked or self.retries.due(now):
            return True
        return or_(
            probes.bindings_written_since(bindings_since),
            probes.bound_templates_written_since(templates_since),
            probes.orphan_works_to_tombstone(BINDING_ANNOTATIONS),
        )

    def reconcile(self) -> Outcome:
        now = self.clock.now()
        written = 0
        try:
            for chunk in chunks(self._changed(), self.batch_size):
                written += self._render_batch(chunk)
            written += self._tombstone_orphans()
        except Conflict as exc:
            # A Work or binding changed under us; the feeds stay put and the next pass re-plans.
            log.info("execution: %s; retrying next pass", exc)
            return Outcome.of(written, WORK_KIND)
        self.bindings_feed.commit(now)
        self.templates_feed.commit(now)
        self.checkpoint.save(self.uow, self._feeds(), self._blocked | self.retries.backing_off(), now)
        return Outcome.of(written, WORK_KIND)

    def _feeds(self) -> dict[str, ChangeFeed]:
        return {"bindings": self.bindings_feed, "templates": self.templates_feed}

    # -- which bindings --------------------------------------------------------------------------------

    def _changed(self) -> list[int]:
        now = self.clock.now()
        self.checkpoint.resume(self.uow, self._feeds())
        since = self.bindings_feed.since(now)
        if since is None:
            self._handled.clear()  # a full resync renders everything again
        with self.uow() as session:
            bindings = BindingRepository(session)
            changed = self.bindings_feed.take(bindings.changed_since(since))
            by_template = self.templates_feed.take(
                bindings.changed_templates_since(self.templates_feed.since(now))
            )
        revisit = self._blocked | self.checkpoint.revisit
        return sorted(self.retries.select([*changed, *by_template], now) | revisit)

    # -- rendering -------------------------------------------------------------------------------------

    def _render_batch(self, ids: Sequence[int]) -> int:
        with self.uow() as session:
            loaded = _binding_views(session, ids)
            uids = [_template_uid(b) for b in loaded.values()]
            templates = template_views_by_uid(session, [uid for uid in uids if uid])
            versions = {i: _versions(b, templates.get(_template_uid(b))) for i, b in loaded.items()}
            bindings = {
                i: b for i, b in loaded.items() if i in self._blocked or self._handled.get(i) != versions[i]
            }
            works = WorkRepository(session)
            owned = works.summaries_for_binding_ids(list(bindings))
            rendered = {
                i: self._render(session, i, b, templates.get(_template_uid(b))) for i, b in bindings.items()
            }
            wanted = {rendering.key_of(w) for ws in rendered.values() for w in ws or ()}
            # Works already at a desired key, by key: one lookup per desired Work, not a scan per binding.
            at_key = {_key(w): w for ws in owned.values() for w in ws}
            for summary in works.summaries_by_keys([(k.namespace, k.name) for k in wanted - at_key.keys()]):
                at_key[_key(summary)] = summary
            planned: list[Planned] = []
            for binding_id, binding in bindings.items():
                desired = rendered[binding_id]
                if desired is None:
                    continue
                mine = owned.get(binding_id, [])
                seen = {_key(w) for w in mine}
                adopted = [at_key[k] for k in map(rendering.key_of, desired) if k in at_key and k not in seen]
                planned.append(Planned(binding_id, binding, desired, mine + adopted))
            written = self._write_all(session, planned)
        for p in planned:
            if self.retries.failures(p.binding_id) == 0:
                self._handled[p.binding_id] = versions[p.binding_id]
            else:
                self._handled.pop(p.binding_id, None)
        self._blocked.difference_update(set(ids) - set(loaded))
        self.retries.succeeded(set(ids) - set(loaded))
        for gone in set(ids) - set(loaded):
            self._handled.pop(gone, None)
        return written

    def _write_all(self, session: Session, planned: Sequence[Planned]) -> int:
        """Every binding's Work writes by one flush in a savepoint; if that fails, each binding in its own
        savepoint, so one that cannot be written says why and the others are committed."""

        def batch() -> int:
            plans = [(p, rendering.plan_works(p.binding, p.desired, _stored(p.existing))) for p in planned]
            written = self._apply_batch(session, plans)
            for p, plan in plans:
                self._note_blocked(p.binding_id, plan)
            self.retries.succeeded([p.binding_id for p in planned])
            return written

        each = functools.partial(self._write_each, session, planned)
        return isolation.batch_or_each(session, batch, each, "execution")

    def _apply_batch(self, session: Session, plans: Sequence[tuple[Planned, rendering.WorkPlan]]) -> int:
        works = WorkRepository(session, clock=self.clock.now)
        now = self.clock.now()
        timestamp = format_timestamp(now)
        summaries = {_key(w): w for p, _ in plans for w in p.existing}
        replacing = [summaries[rendering.key_of(w)] for _, plan in plans for w in plan.replace]
        rows = _rows(works, replacing)  # only the Works written over are loaded whole
        created: list[tuple[dict[str, Any], int]] = []
        replaced: list[WorkRow] = []
        resurrected: list[int] = []
        tombstones: list[work_writes.Tombstone] = []
        for p, plan in plans:
            for work in plan.create:
                if work_writes.spec_carries_secret(work.get("spec")):  # sealed by the flush's hooks
                    works.objects.create_pending(work, binding_id=p.binding_id)
                else:
                    created.append((work, p.binding_id))
            for work in plan.replace:
                row = rows[rendering.key_of(work)]
                if works.objects.replace_loaded(row, split(work), flush=False):
                    replaced.append(row)
            resurrected.extend(summaries[key].id for key in plan.resurrect)
            tombstones.extend(_tombstone(summaries[k], timestamp) for k in plan.tombstone)
        # New Works as column values and replaced rows by one executemany each (the ORM inserts row by row
        # through its unit of work, and its versioned UPDATE is one statement per row); a Work carrying a
        # Secret stays with the flush, whose hooks seal its data.
        work_writes.insert_new(session, created, now)
        bulkflush.flush_rows(session, [row for row in replaced if not carries_secret(row)])
        session.flush()
        works.mark_ids_need_sync(resurrected)
        work_writes.tombstone(session, tombstones, now)  # queued too: deletion must reach the member
        return sum(len(plan.create) + len(plan.tombstone) for _, plan in plans) + len(replaced)

    def _write_each(self, session: Session, planned: Sequence[Planned]) -> int:
        written = 0
        for p in planned:
            write = functools.partial(self._write, session, p.binding_id, p.binding, p.desired, p.existing)
            outcome = isolation.isolated(session, write)
            if isinstance(outcome, isolation.Failed):
                self._failed(session, p.binding_id, p.binding, outcome)
            else:
                written += outcome
                self.retries.succeeded([p.binding_id])
        return written

    def _note_blocked(self, binding_id: int, plan: rendering.WorkPlan) -> None:
        if plan.blocked:
            self._blocked.add(binding_id)
        else:
            self._blocked.discard(binding_id)

    def _render(
        self,
        session: Session,
        binding_id: int,
        binding: Mapping[str, Any],
        template: Mapping[str, Any] | None,
    ) -> list[dict[str, Any]] | None:
        """The desired Works, or None to leave the binding's Works untouched this pass."""
        if template is None:
            # Karmada: the template is gone but the binding not yet; its deletion will orphan the Works.
            return None
        try:
            return rendering.render_works(binding, template)
        except Exception as exc:  # a malformed template or binding: this binding waits, the others go on
            self._failed(session, binding_id, binding, isolation.Failed(exc))
            return None

    def _write(
        self,
        session: Session,
        binding_id: int,
        binding: Mapping[str, Any],
        desired: list[dict[str, Any]],
        existing: list[WorkSummary],
    ) -> int:
        plan = rendering.plan_works(binding, desired, _stored(existing))
        self._note_blocked(binding_id, plan)
        summaries = {_key(w): w for w in existing}
        rows = _rows(WorkRepository(session), [summaries[k] for k in plan.tombstone])
        apply_plan(
            session, plan, {k: join(row) for k, row in rows.items()}, format_timestamp(self.clock.now())
        )
        return plan.writes

    # -- orphans ---------------------------------------------------------------------------------------

    def _tombstone_orphans(self) -> int:
        with self.uow() as session:
            works = WorkRepository(session)
            orphans = works.orphans()
            keys = rendering.orphans_to_tombstone(orphans)
            if keys:
                plan = rendering.WorkPlan(tombstone=keys)
                apply_plan(
                    session, plan, {_key_of(w): w for w in orphans}, format_timestamp(self.clock.now())
                )
        return len(keys)

    def _failed(
        self, session: Session, binding_id: int, binding: Mapping[str, Any], failed: isolation.Failed
    ) -> None:
        """Back the binding off and say why on it (Karmada's reason for a binding without its Works)."""
        now = self.clock.now()
        self.retries.failed(binding_id, now)
        isolation.record_failure(
            session, InvolvedObject.of(binding), failed, reason="SyncWorkFailed", source=EVENT_SOURCE, now=now
        )


def apply_plan(
    session: Session,
    plan: rendering.WorkPlan,
    existing: Mapping[rendering.WorkKey, Mapping[str, Any]],
    timestamp: str,
) -> None:
    """Execute a plan: creates, replaces, then tombstones; changed Works are queued for sync."""
    works = WorkRepository(session)
    for work in plan.create:
        works.objects.create(work)
    for work in plan.replace:
        works.objects.replace(work)
    for key in plan.resurrect:
        works.mark_needs_sync(key.namespace, key.name)
    for key in plan.tombstone:
        works.objects.replace(rendering.tombstoned(existing[key], timestamp))
        # A metadata-only change does not queue the Work by itself; deletion must reach the member.
        works.mark_needs_sync(key.namespace, key.name)


def _versions(binding: Mapping[str, Any], template: Mapping[str, Any] | None) -> bytes:
    """What a binding's Works are rendered from, as one digest: the binding (its uid, labels and spec, all
    rendering reads of it besides its name) and its template as rendering reads it (the view without
    status), all but their resourceVersions.

    Not the resourceVersions: status writes (binding status aggregates every Work status change into the
    binding's and the template's status) move them and show the binding in the feeds, but change nothing
    its Works are rendered from; they cost the feeds' read of the binding and template, not a render."""
    meta = binding["metadata"]
    seen = None
    if template is not None:
        seen = {
            **template,
            "metadata": {k: v for k, v in template["metadata"].items() if k != "resourceVersion"},
        }
    content = [str(meta.get("uid")), meta.get("labels") or {}, binding.get("spec") or {}, seen]
    return hashlib.blake2b(orjson.dumps(content, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


def _binding_views(session: Session, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Binding row id → the binding as rendering reads it: kind, identifying metadata and spec, not its
    status (which can be large and is never read here). Fresh from the driver, not ORM state: no copy."""
    if not ids:
        return {}
    b = ResourceBindingRow
    statement = (
        select(b.id, b.api_version, b.kind, b.namespace, b.name, b.uid, b.resource_version, b.labels, b.spec)
        .where(among(session, b.id, ids))
        .order_by(b.id)
    )
    views: dict[int, dict[str, Any]] = {}
    for row_id, api_version, kind, namespace, name, uid, version, labels, spec in session.execute(statement):
        meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
        meta.update(uid=uid, resourceVersion=str(version), **({"labels": labels} if labels else {}))
        views[row_id] = {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec or {}}
    return views


def _stored(summaries: Sequence[WorkSummary]) -> list[rendering.StoredWork]:
    """The planner's view of summarised Works (their spec as a ``SpecDigest``)."""
    return [
        rendering.StoredWork(
            key=_key(w),
            resource_version=str(w.resource_version),
            tombstoned=bool(w.metadata_extra.get(rendering.DELETION_TIMESTAMP)),
            labels=w.labels,
            annotations=w.annotations,
            finalizers=w.metadata_extra.get("finalizers") or [],
            spec=w.spec,
        )
        for w in summaries
    ]


def _tombstone(summary: WorkSummary, timestamp: str) -> work_writes.Tombstone:
    """The tombstone of a summarised Work (its extra metadata marked deleted at ``timestamp``)."""
    extra = rendering.tombstoned_extra(summary.metadata_extra, timestamp)
    return work_writes.Tombstone(summary.id, summary.namespace, summary.name, summary.resource_version, extra)


def _rows(works: WorkRepository, summaries: Sequence[WorkSummary]) -> dict[rendering.WorkKey, WorkRow]:
    """The rows of these summarised Works, by key (one query); ``Conflict`` if one changed since it was
    summarised (this transaction may see a newer commit): the plan was made from what it replaced."""
    rows = works.rows_by_ids([w.id for w in summaries])
    for w in summaries:
        row = rows.get(w.id)
        if row is None or row.resource_version != w.resource_version:
            raise Conflict(WORK_KIND, w.namespace, w.name, "the Work changed while its binding was planned")
    return {_key(w): rows[w.id] for w in summaries}


def _template_uid(binding: Mapping[str, Any]) -> str:
    return str(((binding.get("spec") or {}).get("resource") or {}).get("uid") or "")


def _key(work: WorkSummary) -> rendering.WorkKey:
    return rendering.WorkKey(work.namespace, work.name)


def _key_of(work: Mapping[str, Any]) -> rendering.WorkKey:
    return rendering.key_of(work)


def _describe(binding: Mapping[str, Any]) -> str:
    meta = binding.get("metadata") or {}
    return f"{binding.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')}"
