"""Binding and template status (Karmada's rb_status_controller + `AggregateStatus`): from a binding's Works,
`status.aggregatedStatus` and the `FullyApplied` condition; from those, the template's status.

Queueing: two change feeds (`change_feed`) — Works written since the last pass (their status changed,
they were created or tombstoned) name their bindings through `binding_id`; bindings written since the last
pass may expect a different set of clusters. Nothing else is read. A Work is read as a ``WorkStatusView``
(its status and its manifests' identities, which the database extracts): a pass never loads a manifest. Where
the feeds stand is kept in the database (``feed_checkpoint``): a restart resumes there instead of
re-aggregating every binding.

Invariants:
- `aggregatedStatus` has one item per Work of the binding that is not being deleted, sorted by cluster:
  `applied` from the Work's `Applied` condition (a Work not applied gets health Unknown and its
  message); `status`/`health` from the manifest status matching the template (Karmada
  `assembleWorkStatus`).
- `FullyApplied` is True `FullyAppliedSuccess` iff the items cover exactly the expected clusters
  (`spec.clusters` + `requiredBy` + clusters held by a non-Directly eviction task) and every item is
  applied; otherwise False `FullyAppliedFailed`. A binding none of whose Works has been reported on (no
  Work status yet) and that has no report to correct is left alone (``needs_status``), as Karmada's
  rb-status controller, which neither a Work's creation nor the scheduler's write wakes.
- The template's status (Deployment, StatefulSet) is the sum over the items (`status_interpreter`).
- A batch's statuses are written by one UPDATE per table, each row checking the resourceVersion it was read
  at, as column values from Core rows (no ORM object per binding or template: ``binding_writes``,
  ``status_writes``). If that fails, each binding is written in a savepoint of its own: one binding's
  failure (a malformed status, a race with the scheduler) is rolled back alone, backed off (`RetryBook`)
  and said in a Warning event; the batch goes on.
- Status-only writes: `update_status` never bumps `generation`, never queues the detector or the
  scheduler, and nothing is written when the computed status equals the stored one.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import or_
from sqlalchemy.orm import Session

from federation.controllers import conditions, isolation, rendering
from federation.controllers.batch_pipeline import chunks
from federation.controllers.change_feed import ChangeFeed
from federation.controllers.feed_checkpoint import FeedCheckpoint
from federation.controllers.idle_gate import Probe
from federation.controllers.isolation import RetryBook
from federation.controllers.runtime import Clock, Outcome
from federation.model.binding import CONDITION_FULLY_APPLIED
from federation.model.status_interpreter import UNKNOWN, aggregate_template_status, aggregates
from federation.model.work import CONDITION_APPLIED, ManifestIdentity, WorkStatusView
from federation.store import binding_writes, probes, status_writes
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.errors import Conflict
from federation.store.events import InvolvedObject
from federation.store.manifest import view
from federation.store.repository import ObjectRepository
from federation.store.tables import ResourceTemplateRow
from federation.store.works import WorkRepository

log = logging.getLogger(__name__)

FULLY_APPLIED_SUCCESS = "FullyAppliedSuccess"
FULLY_APPLIED_FAILED = "FullyAppliedFailed"
FULLY_APPLIED_SUCCESS_MESSAGE = "All works have been successfully applied"
FULLY_APPLIED_FAILED_MESSAGE = "Failed to apply all works, see status.aggregatedStatus for details"


# -- pure: aggregation -------------------------------------------------------------------------------


def expected_clusters(binding: Mapping[str, Any]) -> set[str]:
    """Karmada `ObtainBindingSpecExistingClusters`: where the binding should have a Work."""
    return {t.cluster for t in rendering.targets_of(binding)} | rendering.held_clusters(binding)


def aggregated_items(binding: Mapping[str, Any], works: Sequence[WorkStatusView]) -> list[dict[str, Any]]:
    resource = _resource_identity((binding.get("spec") or {}).get("resource") or {})
    items = [_item(work, resource) for work in works if not work.deleting]
    return sorted(items, key=lambda item: str(item["clusterName"]))


def _resource_identity(resource: Mapping[str, Any]) -> ManifestIdentity:
    """The identity of the object the binding's ``spec.resource`` names."""
    fields = ("apiVersion", "kind", "namespace", "name")
    return ManifestIdentity(*(str(resource.get(f) or "") for f in fields))


def _item(work: WorkStatusView, resource: ManifestIdentity) -> dict[str, Any]:
    applied = conditions.find(work.status.get("conditions"), CONDITION_APPLIED)
    if applied is None or applied.get("status") != "True":
        item: dict[str, Any] = {"clusterName": work.cluster, "applied": False, "health": UNKNOWN}
        if applied is not None and applied.get("message"):
            item["appliedMessage"] = str(applied["message"])
        return item
    item = {"clusterName": work.cluster, "applied": True, "health": UNKNOWN}
    matched = _manifest_status(work, resource)
    if matched is not None:
        if matched.get("status") is not None:
            item["status"] = matched["status"]
        item["health"] = matched.get("health") or UNKNOWN
    return item


def _manifest_status(work: WorkStatusView, resource: ManifestIdentity) -> Mapping[str, Any] | None:
    """The manifest status of the manifest that is the binding's template (by identity and ordinal:
    Karmada's ``equalIdentifier``)."""
    ordinal = next((i for i, m in enumerate(work.manifests) if m == resource), None)
    if ordinal is None:
        return None
    group, _, version = resource.api_version.rpartition("/")
    for entry in work.status.get("manifestStatuses") or []:
        ident = entry.get("identifier") or {}
        if (
            ident.get("ordinal") == ordinal
            and (ident.get("group") or "") == group
            and ident.get("version") == version
            and ident.get("kind") == resource.kind
            and (ident.get("namespace") or "") == resource.namespace
            and ident.get("name") == resource.name
        ):
            found: Mapping[str, Any] = entry
            return found
    return None


def fully_applied(items: Sequence[Mapping[str, Any]], expected: set[str]) -> bool:
    """Karmada `worksFullyApplied`: scheduled, one item per expected cluster, all applied."""
    if not expected or len(items) != len(expected):
        return False
    return all(item.get("applied") and item.get("clusterName") in expected for item in items)


def binding_status(
    binding: Mapping[str, Any], works: Sequence[WorkStatusView], now: datetime
) -> dict[str, Any]:
    """The binding's status with ``aggregatedStatus`` and ``FullyApplied`` brought up to date."""
    status = dict(binding.get("status") or {})
    items = aggregated_items(binding, works)
    ok = fully_applied(items, expected_clusters(binding))
    reason = FULLY_APPLIED_SUCCESS if ok else FULLY_APPLIED_FAILED
    message = FULLY_APPLIED_SUCCESS_MESSAGE if ok else FULLY_APPLIED_FAILED_MESSAGE
    status["aggregatedStatus"] = items
    status["conditions"] = conditions.upsert(
        status.get("conditions"), CONDITION_FULLY_APPLIED, ok, reason, message, now
    )
    return status


def needs_status(binding: Mapping[str, Any], works: Sequence[WorkStatusView]) -> bool:
    """Whether there is anything to report: a Work that its member's side (work sync, a Pull agent) has
    reported on, or an old report to correct. As Karmada's rb-status controller, which a Work's status
    change or deletion wakes, never a Work's creation or the scheduler's write of ``spec.clusters``: a new
    placement whose Works nobody has reported on yet gets no status, where it used to get FullyApplied False
    with no items, then False with every item unapplied, each rewritten (with its template's status) a
    moment later: two of a binding's four status writes on the way to FullyApplied."""
    return any(work.status for work in works) or bool((binding.get("status") or {}).get("aggregatedStatus"))


def template_status(template: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The template's new status (None: not an aggregated kind)."""
    if not aggregates(template):
        return None
    return aggregate_template_status(
        template, [i["status"] for i in items if isinstance(i.get("status"), Mapping)]
    )


# -- the reconciler ----------------------------------------------------------------------------------


@dataclass
class BindingStatusController:
    uow: UnitOfWork
    clock: Clock
    interval_seconds: float = 1.0
    batch_size: int = 100
    name: str = "binding-status"
    watches: frozenset[str] = frozenset({"Work", "ResourceBinding", "ClusterResourceBinding"})
    works_feed: ChangeFeed = field(default_factory=ChangeFeed)
    bindings_feed: ChangeFeed = field(default_factory=ChangeFeed)
    retries: RetryBook = field(default_factory=RetryBook)
    # Where the feeds stand, in the database: a restart resumes there rather than re-aggregating everything.
    checkpoint: FeedCheckpoint = field(default_factory=lambda: FeedCheckpoint("binding-status"))

    def pending(self) -> Probe:
        """The runner's idle probe: a retry due, a full resync due, or a row either feed would read."""
        now = self.clock.now()
        works_since, bindings_since = self.works_feed.bound(now), self.bindings_feed.bound(now)
        if works_since is None or bindings_since is None or self.retries.due(now):
            return True
        return or_(
            probes.bound_works_written_since(works_since), probes.bindings_written_since(bindings_since)
        )

    def reconcile(self) -> Outcome:
        now = self.clock.now()
        ids = self._changed(now)
        written = 0
        try:
            for chunk in chunks(ids, self.batch_size):
                written += self._aggregate_batch(chunk)
        except Conflict as exc:
            # Another writer (the scheduler) changed a binding meanwhile; the feeds stay put, so the
            # next pass recomputes from fresh rows.
            log.info("binding status: %s; retrying next pass", exc)
            return Outcome(written)
        self.works_feed.commit(now)
        self.bindings_feed.commit(now)
        self.checkpoint.save(self.uow, self._feeds(), self.retries.backing_off(), now)
        # Its writes are status-only and wake nobody: no controller acts on aggregated status.
        return Outcome(written)

    def _feeds(self) -> dict[str, ChangeFeed]:
        return {"works": self.works_feed, "bindings": self.bindings_feed}

    def _changed(self, now: datetime) -> list[int]:
        self.checkpoint.resume(self.uow, self._feeds())
        with self.uow() as session:
            works = WorkRepository(session).binding_ids_changed_since(self.works_feed.since(now))
            bindings = BindingRepository(session).changed_since(self.bindings_feed.since(now))
        from_works, from_bindings = self.works_feed.take(works), self.bindings_feed.take(bindings)
        return sorted(self.retries.select([*from_works, *from_bindings], now) | self.checkpoint.revisit)

    def _aggregate_batch(self, ids: Sequence[int]) -> int:
        now = self.clock.now()
        with self.uow() as session:
            # Core rows (the feed's own-write stamp besides what a GET renders), in id order.
            rows = dict(sorted(binding_writes.read(session, ids, also=("content_updated_at",)).items()))
            # Views, not copies: nothing here mutates a manifest (the new statuses are new dicts that share
            # the unchanged parts; ``conditions.upsert`` copies what it keeps), and a batch's bindings and
            # templates are most of what a pass decodes.
            bindings = {binding_id: view(row) for binding_id, row in rows.items()}
            works = WorkRepository(session).status_views_for_binding_ids(list(bindings))
            uids = [u for b in bindings.values() if (u := _template_uid(b))]
            template_rows = status_writes.read_by_uids(session, ResourceTemplateRow, uids)
            templates = {uid: view(row) for uid, row in template_rows.items()}
            batch = functools.partial(
                self._write_batch, session, rows, bindings, works, template_rows, templates, now
            )
            each = functools.partial(self._write_each, session, bindings, works, templates, now)
            return isolation.batch_or_each(session, batch, each, self.name)

    def _write_batch(
        self,
        session: Session,
        rows: Mapping[int, Any],
        bindings: Mapping[int, Mapping[str, Any]],
        works: Mapping[int, Sequence[WorkStatusView]],
        template_rows: Mapping[str, Any],
        templates: Mapping[str, Mapping[str, Any]],
        now: datetime,
    ) -> int:
        """Every status of the batch by a few statements (one UPDATE per table, each row checking the
        resourceVersion it was read at, so the scheduler's concurrent write is never lost: the batch fails
        and ``_write_each`` takes over)."""
        rewrites: list[binding_writes.Rewrite] = []
        template_writes: dict[str, status_writes.StatusWrite] = {}
        for binding_id, binding in bindings.items():
            owned = works.get(binding_id, [])
            if not needs_status(binding, owned):
                continue
            status = binding_status(binding, owned, now)
            if status != (binding.get("status") or {}):
                rewrites.append(binding_writes.Rewrite(rows[binding_id], {**binding, "status": status}))
            template = templates.get(_template_uid(binding))
            new = None if template is None else template_status(template, status["aggregatedStatus"])
            if template is not None and new is not None and new != (template.get("status") or {}):
                uid = _template_uid(binding)
                template_writes[uid] = status_writes.StatusWrite(template_rows[uid], new)
        stored = binding_writes.rewrite(session, rewrites, now)
        status_writes.write(session, ResourceTemplateRow, list(template_writes.values()), now)
        written = len(rewrites) + len(template_writes)
        # Our status writes move the bindings' resourceVersion (not their content stamp): the feed need not
        # hand them back while they are inside its window.
        self.bindings_feed.own(
            (r.stored.id, r.stored.content_updated_at, int(s["metadata"]["resourceVersion"]))
            for r, s in zip(rewrites, stored, strict=True)
        )
        self.retries.succeeded(list(bindings))
        return written

    def _write_each(
        self,
        session: Session,
        bindings: Mapping[int, Mapping[str, Any]],
        works: Mapping[int, Sequence[WorkStatusView]],
        templates: Mapping[str, Mapping[str, Any]],
        now: datetime,
    ) -> int:
        """Each binding in a savepoint of its own: the one that cannot be written says why, alone."""
        session.expire_all()  # the rolled-back batch left values on the loaded rows that were never written
        written = 0
        for binding_id, binding in bindings.items():
            owned = works.get(binding_id, [])
            template = templates.get(_template_uid(binding))
            outcome = isolation.isolated(
                session, functools.partial(_aggregate_one, session, binding, owned, template, now)
            )
            if isinstance(outcome, isolation.Failed):
                self._failed(session, binding_id, binding, outcome)
            else:
                written += outcome
                self.retries.succeeded([binding_id])
        return written

    def _failed(
        self, session: Session, binding_id: int, binding: Mapping[str, Any], failed: isolation.Failed
    ) -> None:
        now = self.clock.now()
        self.retries.failed(binding_id, now)
        isolation.record_failure(
            session,
            InvolvedObject.of(binding),
            failed,
            reason="AggregateStatusFailed",
            source=self.name,
            now=now,
        )


def _aggregate_one(
    session: Session,
    binding: Mapping[str, Any],
    works: Sequence[WorkStatusView],
    template: Mapping[str, Any] | None,
    now: datetime,
) -> int:
    if not needs_status(binding, works):
        return 0
    return _write_status(session, binding, works, template, now)


def _write_status(
    session: Session,
    binding: Mapping[str, Any],
    works: Sequence[WorkStatusView],
    template: Mapping[str, Any] | None,
    now: datetime,
) -> int:
    written = 0
    status = binding_status(binding, works, now)
    if status != (binding.get("status") or {}):
        meta = binding["metadata"]
        # With the version read: the scheduler writes this status too, and its write must not be lost.
        BindingRepository(session).objects(meta.get("namespace") or "").update_status(
            meta.get("namespace") or "", meta["name"], status, expected_rv=meta["resourceVersion"]
        )
        written += 1
    if template is not None:
        written += _write_template_status(session, template, status["aggregatedStatus"])
    return written


def _write_template_status(
    session: Session, template: Mapping[str, Any], items: Sequence[Mapping[str, Any]]
) -> int:
    new = template_status(template, items)
    if new is None or new == (template.get("status") or {}):
        return 0
    meta = template["metadata"]
    repository = ObjectRepository(session, str(template["kind"]), str(template["apiVersion"]))
    repository.update_status(meta.get("namespace") or "", meta["name"], new)
    return 1


def _template_uid(binding: Mapping[str, Any]) -> str:
    return str(((binding.get("spec") or {}).get("resource") or {}).get("uid") or "")
