"""The detector: matches resource templates to (Cluster)PropagationPolicies and keeps one binding per
claimed template.

Level-triggered over queues, never over all rows:
1. Queued policies: every template of a kind they select (in their namespace, for a
   PropagationPolicy) and every template they claim today is queued. One UPDATE per policy.
2. Queued templates: choose the policy (`detection.choose_policy`), then create, update or leave the
   binding; a template no policy matches keeps any binding it had (Karmada does not unpropagate when a
   policy goes away) but loses its claim labels.
Each claimed batch is one transaction; every item in it runs in its own savepoint (``isolation``): a
template or policy that fails (a malformed body stored before admission refused it, a bug) is rolled
back alone, gets a Warning event saying why, and is retried with exponential back-off; the rest of the
batch is committed.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from federation.controllers import isolation
from federation.controllers.idle_gate import Probe
from federation.controllers.runtime import Clock, Outcome
from federation.model import failover
from federation.model import propagation as detection
from federation.model.policy import PropagationSpec
from federation.store import binding_writes, bulkflush, claims
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.dialect import pairs_among
from federation.store.events import InvolvedObject
from federation.store.manifest import join, split
from federation.store.repository import ObjectRepository, manifests_by_id
from federation.store.tables import (
    ClusterPropagationPolicyRow,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    table_of,
)
from federation.store.types import utcnow

log = logging.getLogger(__name__)

POLICY_API_VERSION = "policy.karmada.io/v1alpha1"
POLICY_KINDS = ("PropagationPolicy", "ClusterPropagationPolicy")
# What the API notifies for a write of any resource template, whatever its kind.
TEMPLATE_KIND = "ResourceTemplate"
_QUEUES = (PropagationPolicyRow, ClusterPropagationPolicyRow, ResourceTemplateRow)


@dataclass
class Detector:
    uow: UnitOfWork
    clock: Clock
    identity: str
    interval_seconds: float = 1.0
    batch_size: int = 100
    claim_seconds: float = 60.0
    backoff: claims.Backoff = field(default_factory=claims.Backoff)
    # (not-ready, unreachable) seconds: the NoExecute tolerations Karmada's webhook gives every placement
    # that has none of its own for those taints (failover settings); None adds nothing.
    default_toleration_seconds: tuple[int, int] | None = None
    name: str = "detector"
    watches: frozenset[str] = frozenset({*POLICY_KINDS, TEMPLATE_KIND})

    def pending(self) -> Probe:
        """The runner's idle probe: a policy or template this pass would claim."""
        now = self.clock.now()
        return or_(*(claims.claimable(table, now) for table in _QUEUES))

    def reconcile(self) -> Outcome:
        queued = self._expand_policies()
        written = 0
        while True:
            done, wrote = self._detect_batch()
            written += wrote
            if done < self.batch_size:
                break
        return Outcome.of(written + queued, "ResourceBinding", "ClusterResourceBinding")

    # -- policies -----------------------------------------------------------------------------------

    def _expand_policies(self) -> int:
        expanded = 0
        for table in (PropagationPolicyRow, ClusterPropagationPolicyRow):
            with self.uow() as session:
                claimed = claims.claim(
                    session, table, self.identity, self.batch_size, self.clock.now(), self.claim_seconds
                )
                policies = manifests_by_id(session, table, [c.id for c in claimed])
                failed = self._each(session, table, claimed, policies, queue_templates_for_policy)
                done = [c for c in claimed if c.id not in failed]
                claims.release(session, table, done, self.identity, done=True)
                expanded += len(done)
        return expanded

    def _each(
        self,
        session: Session,
        table: claims.Claimable,
        claimed: Sequence[claims.Claim],
        manifests: Mapping[int, dict[str, Any]],
        work: Callable[[Session, dict[str, Any]], object],
    ) -> set[int]:
        """Run ``work`` on each claimed item in its own savepoint; the ids that failed, backed off."""
        failed: set[int] = set()
        for item in claimed:
            manifest = manifests.get(item.id)
            if manifest is None:
                continue
            outcome = isolation.isolated(session, functools.partial(work, session, manifest))
            if isinstance(outcome, isolation.Failed):
                self._failed(session, table, item, outcome)
                failed.add(item.id)
        return failed

    def _failed(
        self, session: Session, table: claims.Claimable, item: claims.Claim, outcome: isolation.Failed
    ) -> None:
        now = self.clock.now()
        claims.fail(session, table, item, self.identity, now, self.backoff)
        involved = InvolvedObject(item.kind, item.name, item.namespace, item.uid)
        isolation.record_failure(
            session, involved, outcome, reason="DetectionFailed", source=self.name, now=now
        )

    # -- templates ----------------------------------------------------------------------------------

    def _detect_batch(self) -> tuple[int, int]:
        with self.uow() as session:
            claimed = claims.claim(
                session,
                ResourceTemplateRow,
                self.identity,
                self.batch_size,
                self.clock.now(),
                self.claim_seconds,
            )
            if not claimed:
                return 0, 0
            templates = manifests_by_id(session, ResourceTemplateRow, [c.id for c in claimed])
            # A PropagationPolicy claims templates of its own namespace only: the batch's namespaces'.
            namespaces = {str(t["metadata"].get("namespace") or "") for t in templates.values()}
            policies = _policies_in(session, namespaces - {""})
            cluster_policies = _all(session, "ClusterPropagationPolicy")
            # One read of the bindings for the whole batch, not one per template.
            uids = [t["metadata"]["uid"] for t in templates.values()]
            rows = BindingRepository(session).rows_for_templates(uids)
            existing = {uid: join(row) for uid, row in rows.items()}
            failed: set[int] = set()
            planned: list[Planned] = []
            for item in claimed:
                template = templates.get(item.id)
                if template is None:
                    continue
                found = existing.get(template["metadata"]["uid"])
                try:
                    action = self._plan(template, found, policies, cluster_policies)
                except Exception as exc:  # a malformed template or policy: this one backs off, the rest go on
                    self._failed(session, ResourceTemplateRow, item, isolation.Failed(exc))
                    failed.add(item.id)
                    continue
                if action is not None:
                    planned.append(Planned(item, template, found, action))

            def each() -> int:
                def detect(session: Session, template: dict[str, Any]) -> None:
                    found = existing.get(template["metadata"]["uid"])
                    writes.append(self._detect_one(session, template, found, policies, cluster_policies))

                writes: list[int] = []
                ids = {p.item.id for p in planned}
                items = [c for c in claimed if c.id in ids]
                failed.update(self._each(session, ResourceTemplateRow, items, templates, detect))
                return sum(writes)

            batch = functools.partial(_write_batch, session, planned, rows)
            written = isolation.batch_or_each(session, batch, each, "detector")
            done = [c for c in claimed if c.id not in failed]
            claims.release(session, ResourceTemplateRow, done, self.identity, done=True)
        return len(claimed), written

    def _plan(
        self,
        template: dict[str, Any],
        existing: dict[str, Any] | None,
        policies: Sequence[Mapping[str, Any]],
        cluster_policies: Sequence[Mapping[str, Any]],
    ) -> Action | None:
        """What the template's binding needs, decided in memory (None: nothing)."""
        policy = detection.choose_policy(template, policies, cluster_policies, detection.claim_of(existing))
        if policy is None:
            unclaimed = _unclaimed(existing)
            return None if unclaimed is None else Action(REPLACE, unclaimed)
        desired = detection.desired_binding(template, policy, existing)
        if self.default_toleration_seconds is not None:
            _add_default_tolerations(desired, *self.default_toleration_seconds)
        if existing is None:
            return Action(CREATE, desired)
        if not detection.binding_changed(existing, desired):
            return None
        desired["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        return Action(REPLACE, desired)

    def _detect_one(
        self,
        session: Session,
        template: dict[str, Any],
        existing: dict[str, Any] | None,
        policies: Sequence[Mapping[str, Any]],
        cluster_policies: Sequence[Mapping[str, Any]],
    ) -> int:
        """One template's binding written in its own savepoint (after a batch write failed)."""
        action = self._plan(template, existing, policies, cluster_policies)
        if action is None:
            return 0
        bindings = _bindings(session, action.binding)
        if action.verb == CREATE:
            return _create(bindings, action.binding)
        bindings.replace(action.binding)
        return 1


CREATE, REPLACE = "create", "replace"


@dataclass(frozen=True, slots=True)
class Action:
    """A binding to create, or to write over the stored one (``REPLACE``: its resourceVersion is the one
    read)."""

    verb: str
    binding: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Planned:
    item: claims.Claim
    template: dict[str, Any]
    existing: dict[str, Any] | None
    action: Action


def _write_batch(session: Session, planned: Sequence[Planned], rows: Mapping[str, ResourceBindingRow]) -> int:
    """Every planned binding by a few statements: new bindings inserted as column values
    (``binding_writes.insert_new``), rewritten ones by ``bulkflush`` (one UPDATE per shape). A name taken
    by a binding no template of ours owns is left alone, as ``_create`` does. Raises on any failure (the
    caller writes one by one instead)."""
    creates = [p.action.binding for p in planned if p.action.verb == CREATE]
    taken = _taken_names(session, creates)
    as_columns: list[dict[str, Any]] = []
    written = 0
    for binding in creates:
        meta = binding["metadata"]
        if (meta.get("namespace") or "", meta["name"]) in taken:
            _say_taken(meta)
            continue
        if binding_writes.insertable(binding):  # a new binding has no clusters yet: no child rows
            as_columns.append(binding)
        else:
            _bindings(session, binding).create_pending(binding)
        written += 1
    # The repositories' clock, as ``create_pending`` stamps a binding.
    binding_writes.insert_new(session, as_columns, utcnow())
    replaced: list[ResourceBindingRow] = []
    with bulkflush.deferred_children(session) as children:
        for p in planned:
            if p.action.verb != REPLACE:
                continue
            row = rows[p.template["metadata"]["uid"]]
            if _bindings(session, p.action.binding).replace_loaded(row, split(p.action.binding), flush=False):
                replaced.append(row)
    bulkflush.flush_rows(session, replaced, children)
    session.flush()
    return written + len(replaced)


def _taken_names(session: Session, bindings: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The (namespace, name) of these bindings that some binding holds already (one query)."""
    keys = sorted({(b["metadata"].get("namespace") or "", b["metadata"]["name"]) for b in bindings})
    if not keys:
        return set()
    b = ResourceBindingRow
    statement = select(b.namespace, b.name).where(pairs_among(session, (b.namespace, b.name), keys))
    return {(str(namespace), str(name)) for namespace, name in session.execute(statement)}


def queue_templates_for_policy(session: Session, policy: Mapping[str, Any]) -> None:
    """Queue every template the policy may select now, and every template it claimed before."""
    spec = PropagationSpec.model_validate(policy.get("spec") or {})
    meta = policy["metadata"]
    namespace = meta.get("namespace") if policy["kind"] == "PropagationPolicy" else None
    templates = table_of(ResourceTemplateRow)
    selected = [
        (templates.c.api_version == s.api_version) & (templates.c.kind == s.kind)
        for s in spec.resource_selectors
    ]
    key = f"{policy['kind']}/{meta.get('namespace') or ''}/{meta['name']}"
    claimed = (
        select(ResourceBindingRow.template_uid).where(ResourceBindingRow.policy_key == key).scalar_subquery()
    )
    condition = or_(templates.c.uid.in_(claimed), *selected)
    if namespace is not None:
        condition = or_(templates.c.uid.in_(claimed), (templates.c.namespace == namespace) & or_(*selected))
    session.execute(update(templates).where(condition).values(claims.queue_values(ResourceTemplateRow)))


def _add_default_tolerations(binding: dict[str, Any], not_ready: int, unreachable: int) -> None:
    placement = binding.get("spec", {}).get("placement")
    if not isinstance(placement, dict):
        return
    tolerations = placement.get("clusterTolerations") or []
    placement["clusterTolerations"] = failover.with_default_tolerations(tolerations, not_ready, unreachable)


def _policies_in(session: Session, namespaces: Collection[str]) -> list[dict[str, Any]]:
    """The PropagationPolicies of these namespaces (one query), in the order a list returns them."""
    if not namespaces:
        return []
    row = PropagationPolicyRow
    statement = select(row).where(row.namespace.in_(sorted(namespaces))).order_by(row.namespace, row.name)
    return [join(found) for found in session.scalars(statement)]


def _all(session: Session, kind: str) -> list[dict[str, Any]]:
    items, _ = ObjectRepository(session, kind, POLICY_API_VERSION).list()
    return items


def _create(bindings: ObjectRepository, desired: dict[str, Any]) -> int:
    meta = desired["metadata"]
    if bindings.get(meta.get("namespace"), meta["name"]) is not None:
        _say_taken(meta)
        return 0
    bindings.create(desired)
    return 1


def _say_taken(meta: Mapping[str, Any]) -> None:
    # A binding of that name that belongs to no template of ours (made by hand): leave it alone.
    log.warning(
        "binding %s/%s exists for another resource; not taking it over",
        meta.get("namespace", ""),
        meta["name"],
    )


def _bindings(session: Session, binding: Mapping[str, Any]) -> ObjectRepository:
    namespace = binding["metadata"].get("namespace") or ""
    return ObjectRepository(session, _binding_kind(namespace), detection.BINDING_API_VERSION)


def _binding_kind(namespace: str) -> str:
    return "ResourceBinding" if namespace else "ClusterResourceBinding"


def _unclaimed(existing: dict[str, Any] | None) -> dict[str, Any] | None:
    """The binding without its policy's claim labels (a template no policy matches keeps its binding but
    loses the claim), or None when it has none to lose."""
    if existing is None or detection.claim_of(existing) is None:
        return None
    labels = {
        k: v
        for k, v in (existing["metadata"].get("labels") or {}).items()
        if k not in detection.POLICY_LABELS
    }
    return {**existing, "metadata": {**existing["metadata"], "labels": labels}}
