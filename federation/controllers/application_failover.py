"""Application failover (Karmada ``pkg/controllers/applicationfailover``) with the retry budget of the
error-rescheduling design: a workload that stays Unhealthy on a cluster longer than its toleration is
evicted from that cluster, at most ``max-reschedules`` times, and the scheduler avoids the clusters it
already failed on (``model/budget.py`` states the rules).

One pass:
1. The bindings with ``spec.failover.application``, as (id, resourceVersion, template resourceVersion)
   (one query). A binding is looked at again only when it or its template was written since (a health
   change rewrites its status; a user may raise the budget on the template) or a toleration runs out;
   the rest cost nothing. The rows of bindings that left are deleted (one statement); the first pass
   after a start also sweeps rows of bindings that left while nobody watched.
2. Those bindings and their health rows are loaded (one query each); each target
   cluster's health in ``status.aggregatedStatus`` moves its record (``budget.observe``, pure). Changed
   records are upserted, rows of clusters no longer targeted deleted (one statement each).
3. A cluster over its toleration is charged against the budget (``budget.charge``, pure). Within it, the
   template's annotations (count, tried list; written with the resourceVersion read, a Conflict retries)
   and the binding's eviction (``failover.evict_cluster``: reason ApplicationFailure, the policy's
   purgeMode and gracePeriodSeconds, ``Never`` → suppressDeletion, preservedLabelState) are written in
   one savepoint of the pass's transaction, with history rows (Evicted, BudgetChanged) and events; the
   write itself queues the binding for the scheduler (``derive``). Spent: nothing is evicted and the
   binding's ``FailoverExhausted`` condition turns True, said once (a Warning event, a FailoverExhausted
   history row), not every pass.

Invariants:
- ``failover.enabled: false``: nothing at all (no tracking, no eviction).
- Unhealthy time lives in ``workload_health``: a restart in the middle of a toleration keeps it.
- Only targets count: clusters of ``spec.clusters`` without an eviction task (Karmada); a cluster without
  an aggregatedStatus item is Unknown (its clock pauses). DaemonSets are exempt.
- Writing the template's annotations changes no placement by itself: the detector re-reads the template
  and finds the binding unchanged; only the eviction (a spec change) queues the scheduler.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.orm import Session

from federation.controllers import budget_records as records
from federation.controllers import conditions, isolation
from federation.controllers.batch_pipeline import chunks
from federation.controllers.idle_gate import Probe
from federation.controllers.runtime import Clock, Outcome
from federation.model import budget, failover
from federation.model.policy import DEFAULT_GRACE_PERIOD_SECONDS, DEFAULT_TOLERATION_SECONDS
from federation.settings import FailoverSettings
from federation.store import probes
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.errors import Conflict
from federation.store.events import InvolvedObject
from federation.store.health import HealthRepository, Observation
from federation.store.repository import ObjectRepository, manifests_by_id
from federation.store.tables import ResourceBindingRow, ResourceTemplateRow

log = logging.getLogger(__name__)

BINDING_KINDS = ("ResourceBinding", "ClusterResourceBinding")
TEMPLATE_KIND = "ResourceTemplate"  # what the API notifies for a write of any template
# A Conflict on the template or the binding (someone wrote it between our read and our write) is retried
# this many times in the same pass, each in a fresh savepoint that re-reads both.
WRITE_ATTEMPTS = 3

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Candidate:
    binding_id: int
    resource_version: int
    template_version: int | None


@dataclass(frozen=True, slots=True)
class Judgement:
    """One binding's observations (pure): records to store, clusters to forget, clusters over their
    toleration, when to look again, and whether a FailoverExhausted=True condition no longer holds."""

    observed: tuple[tuple[str, budget.HealthRecord], ...] = ()
    forgotten: tuple[str, ...] = ()
    over: tuple[tuple[str, budget.HealthRecord], ...] = ()
    next_at: datetime | None = None
    settle: bool = False

    @property
    def acts(self) -> bool:
        return bool(self.over) or self.settle


@dataclass
class ApplicationFailover:
    uow: UnitOfWork
    clock: Clock
    settings: FailoverSettings
    batch_size: int = 100
    name: str = "application-failover"
    watches: frozenset[str] = frozenset({*BINDING_KINDS, TEMPLATE_KIND})
    interval_seconds: float = field(init=False)
    # binding id → (resourceVersion, template resourceVersion, when to look again or None: at a write).
    _judged: dict[int, tuple[int, int | None, datetime | None]] = field(default_factory=dict)
    _swept: bool = False

    def __post_init__(self) -> None:
        self.interval_seconds = self.settings.interval_seconds

    def pending(self) -> Probe:
        """The runner's idle probe: a binding with application failover (or memos and rows to sweep)."""
        if not self.settings.enabled:
            return False
        if self._judged or not self._swept:
            return True
        return probes.application_failover_bindings()

    def reconcile(self) -> Outcome:
        if not self.settings.enabled:
            return Outcome()
        now = self.clock.now()
        due = self._due(self._candidates(), now)
        written = 0
        for batch in chunks(due, self.batch_size):
            written += self._judge_batch(batch, now)
        return Outcome.of(written, *BINDING_KINDS, TEMPLATE_KIND)

    # -- which bindings ---------------------------------------------------------------------------------

    def _candidates(self) -> list[Candidate]:
        statement = (
            select(
                ResourceBindingRow.id,
                ResourceBindingRow.resource_version,
                ResourceTemplateRow.resource_version,
            )
            .outerjoin(ResourceTemplateRow, ResourceTemplateRow.uid == ResourceBindingRow.template_uid)
            .where(_has_application_failover())
            .order_by(ResourceBindingRow.id)
        )
        with self.uow() as session:
            candidates = [Candidate(*row) for row in session.execute(statement)]
            if not self._swept:
                HealthRepository(session).keep_only(_candidate_ids())
                self._swept = True
        return candidates

    def _due(self, candidates: Sequence[Candidate], now: datetime) -> list[Candidate]:
        """The bindings to judge now; forgets (memo and rows) the bindings that left."""
        present = {c.binding_id for c in candidates}
        gone = [i for i in self._judged if i not in present]
        if gone:
            with self.uow() as session:
                HealthRepository(session).forget_bindings(gone)
            for binding_id in gone:
                del self._judged[binding_id]
        due = []
        for candidate in candidates:
            memo = self._judged.get(candidate.binding_id)
            if memo is None or memo[:2] != (candidate.resource_version, candidate.template_version):
                due.append(candidate)  # it or its template was written since
            elif memo[2] is not None and memo[2] <= now:
                due.append(candidate)  # a toleration ran out
        return due

    # -- judge and act ----------------------------------------------------------------------------------

    def _judge_batch(self, due: Sequence[Candidate], now: datetime) -> int:
        template_versions = {c.binding_id: c.template_version for c in due}
        with self.uow() as session:
            bindings = manifests_by_id(session, ResourceBindingRow, list(template_versions))
            health = HealthRepository(session)
            records = health.for_bindings(list(bindings))
            judged = {i: judge(b, records.get(i, {}), now) for i, b in bindings.items()}
            _store_observations(health, judged)
            written = 0
            for binding_id, binding in bindings.items():
                judgement = judged[binding_id]
                version = int(binding["metadata"]["resourceVersion"])
                self._judged[binding_id] = (version, template_versions[binding_id], judgement.next_at)
                if judgement.acts:
                    written += self._act_isolated(session, binding_id, binding, judgement, now)
        return written

    def _act_isolated(
        self, session: Session, binding_id: int, binding: dict[str, Any], judgement: Judgement, now: datetime
    ) -> int:
        act = functools.partial(self._act, session, binding_id, binding, judgement.over, now)
        outcome = _with_retries(session, act)
        if not isinstance(outcome, isolation.Failed):
            return outcome
        self._judged.pop(binding_id, None)  # judged again next pass
        isolation.record_failure(
            session,
            InvolvedObject.of(binding),
            outcome,
            reason="ApplicationFailoverFailed",
            source=records.EVENT_SOURCE,
            now=now,
        )
        return 0

    def _act(
        self,
        session: Session,
        binding_id: int,
        loaded: dict[str, Any],
        over: Sequence[tuple[str, budget.HealthRecord]],
        now: datetime,
    ) -> int:
        """Evict within the budget and say whether the budget holds the rest back (re-read under this
        savepoint); how many objects were written."""
        meta = loaded["metadata"]
        namespace = meta.get("namespace") or ""
        repo = BindingRepository(session, clock=self.clock.now).objects(namespace)
        binding = repo.get(namespace, meta["name"])
        if binding is None:
            return 0
        templates, template = records.load_template(session, binding, self.clock.now)
        charges = self._charges(binding, template, over)
        allowed = [c for c in charges if c.allowed]
        written = 0
        if allowed:
            binding = self._evict(session, binding_id, (repo, binding), (templates, template), allowed, now)
            written += 2
        refused = [c for c in charges if not c.allowed]
        return written + records.write_exhausted(session, repo, binding, template, refused, now)

    def _charges(
        self,
        binding: Mapping[str, Any],
        template: Mapping[str, Any],
        over: Sequence[tuple[str, budget.HealthRecord]],
    ) -> list[budget.Charge]:
        """Each cluster over its toleration (and still a target) charged in turn against the budget."""
        targets = _targets(binding)
        current = budget.read_budget(template, _behavior(binding))
        charges = []
        for cluster, record in over:
            if cluster not in targets:
                continue
            charged = budget.charge(current, cluster, targets, record, self.settings.reset_after_seconds)
            charges.append(charged)
            if charged.allowed:
                current = charged.after
        return charges

    def _evict(
        self,
        session: Session,
        binding_id: int,
        binding_in: tuple[ObjectRepository, dict[str, Any]],
        template_in: tuple[ObjectRepository, dict[str, Any]],
        allowed: Sequence[budget.Charge],
        now: datetime,
    ) -> dict[str, Any]:
        """Write the budget onto the template and the evictions onto the binding (one savepoint)."""
        (repo, binding), (templates, template) = binding_in, template_in
        stored_template = records.write_annotations(templates, template, allowed[-1].after.annotations())
        spec = binding["spec"]
        for charged in allowed:
            spec = failover.evict_cluster(spec, _eviction(binding, charged.cluster), now)
        stored = repo.replace({**binding, "spec": spec})
        HealthRepository(session).forget([(binding_id, c.cluster) for c in allowed])
        messages = [(c, _eviction(binding, c.cluster).message) for c in allowed]
        records.say_evicted(session, stored, stored_template, messages, now)
        return stored


# -- pure: one binding's observations -------------------------------------------------------------------


def judge(binding: Mapping[str, Any], records: Mapping[str, budget.HealthRecord], now: datetime) -> Judgement:
    """Move each target's record by its current health; which clusters are over their toleration."""
    behavior = _behavior(binding)
    kind = str(((binding.get("spec") or {}).get("resource") or {}).get("kind") or "")
    if behavior is None or budget.exempt(kind):
        return Judgement(forgotten=tuple(sorted(records)))
    toleration, targets = _toleration(behavior), _targets(binding)
    current = _observe(targets, _health(binding), records, now)
    over = [(c, r) for c, r in current.items() if r.over_toleration(toleration, now)]
    ends = [e for r in current.values() if (e := r.toleration_ends(toleration, now)) is not None and e > now]
    # Unknown pauses a spent workload's clock without ending its failure: the condition stays until the
    # workload is Healthy again or gone from the cluster (no True/False flapping with the status).
    held = any(r.unhealthy_for(now) >= toleration for r in current.values())
    return Judgement(
        observed=tuple((c, r) for c, r in current.items() if r != records.get(c)),
        forgotten=tuple(sorted(set(records) - set(targets))),
        over=tuple(over),
        next_at=min(ends, default=None),
        settle=not held and _exhausted(binding),
    )


def _observe(
    targets: Sequence[str],
    health: Mapping[str, str],
    records: Mapping[str, budget.HealthRecord],
    now: datetime,
) -> dict[str, budget.HealthRecord]:
    """Each target's record after its current health (none for a target nothing is known of yet)."""
    current = {}
    for cluster in targets:
        previous, seen = records.get(cluster), health.get(cluster, budget.UNKNOWN)
        if previous is not None or seen != budget.UNKNOWN:
            current[cluster] = budget.observe(previous, seen, now)
    return current


def _exhausted(binding: Mapping[str, Any]) -> bool:
    condition = conditions.find((binding.get("status") or {}).get("conditions"), records.CONDITION_EXHAUSTED)
    return condition is not None and condition.get("status") == "True"


def _behavior(binding: Mapping[str, Any]) -> Mapping[str, Any] | None:
    behavior = ((binding.get("spec") or {}).get("failover") or {}).get("application")
    return behavior if isinstance(behavior, Mapping) else None


def _toleration(behavior: Mapping[str, Any]) -> int:
    value = (behavior.get("decisionConditions") or {}).get("tolerationSeconds")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return DEFAULT_TOLERATION_SECONDS


def _targets(binding: Mapping[str, Any]) -> list[str]:
    """``spec.clusters`` without the clusters of eviction tasks (Karmada skips those)."""
    spec = binding.get("spec") or {}
    tasks = {
        str(t.get("fromCluster")) for t in spec.get("gracefulEvictionTasks") or [] if isinstance(t, Mapping)
    }
    names = [str(c.get("name")) for c in spec.get("clusters") or [] if isinstance(c, Mapping)]
    return [n for n in names if n not in tasks]


def _health(binding: Mapping[str, Any]) -> dict[str, str]:
    items = (binding.get("status") or {}).get("aggregatedStatus") or []
    return {
        str(i.get("clusterName")): budget.normalize(i.get("health"))
        if i.get("applied") is not False
        else budget.UNKNOWN
        for i in items
        if isinstance(i, Mapping)
    }


def _eviction(binding: Mapping[str, Any], cluster: str) -> failover.Eviction:
    """The task for an application eviction: the policy's purgeMode and grace period (Karmada defaults)."""
    behavior = _behavior(binding) or {}
    mode = failover.purge_mode(behavior.get("purgeMode"))
    grace = behavior.get("gracePeriodSeconds") or DEFAULT_GRACE_PERIOD_SECONDS
    return failover.Eviction(
        cluster=cluster,
        reason=failover.REASON_APPLICATION_FAILURE,
        producer=failover.PRODUCER_APPLICATION_FAILOVER,
        message=f"Evicted from {cluster}: the workload stayed Unhealthy beyond its toleration "
        f"({_toleration(behavior)}s)",
        purge_mode=mode,
        grace_period_seconds=int(grace) if mode == "Gracefully" else None,
        preserved_label_state=failover.preserved_label_state(binding, cluster, "application"),
    )


# -- writes -----------------------------------------------------------------------------------------------


def _store_observations(health: HealthRepository, judged: Mapping[int, Judgement]) -> None:
    """Every changed record of the batch in one upsert, every forgotten row in one delete."""
    health.upsert(
        [Observation(i, cluster, record) for i, j in judged.items() for cluster, record in j.observed]
    )
    health.forget([(i, cluster) for i, j in judged.items() for cluster in j.forgotten])


# -- helpers ----------------------------------------------------------------------------------------------


def _has_application_failover() -> ColumnElement[bool]:
    """``spec.failover.application`` is set (an indexed column ``derive`` keeps from the body)."""
    return ResourceBindingRow.application_failover.is_(True)


def _candidate_ids() -> Select[int]:
    return select(ResourceBindingRow.id).where(_has_application_failover())


def _with_retries(session: Session, work: Callable[[], T]) -> T | isolation.Failed:
    """``isolation.isolated``, run again (a fresh savepoint, fresh reads) after a Conflict."""
    outcome = isolation.isolated(session, work)
    for _ in range(WRITE_ATTEMPTS - 1):
        if not (isinstance(outcome, isolation.Failed) and isinstance(outcome.error, Conflict)):
            break
        outcome = isolation.isolated(session, work)
    return outcome
