"""The taint manager (Karmada ``pkg/controllers/cluster/taint_manager.go``): evicts bindings from clusters
whose NoExecute taints their placement does not tolerate, at once or when the toleration runs out.

One pass:
1. Read every cluster's taints and Ready (one query). No NoExecute taint anywhere: nothing to do.
2. The bindings on tainted clusters, as (binding id, resourceVersion, cluster) from the indexed target rows
   (one query). A binding is looked at again only when it was written since, its cluster's taints moved,
   or its toleration runs out (``_due``); the rest cost nothing.
3. Those bindings are loaded (one query, and one each for their target and task rows) and judged
   (``failover.taint_verdict``, pure). The evictions (``failover.evict_cluster``) are written to the loaded
   rows by one flush in a savepoint, with one event upsert; the pass's history rows go in the same
   transaction (one statement). If the batch fails, each eviction is retried in its own savepoint, so a
   binding that cannot be evicted says why and the others go on. The binding is queued for the scheduler
   by the write itself (``derive``).

Invariants:
- ``failover.enabled: false`` evicts nothing.
- Rate: ``eviction_rate_per_second`` (0 = unlimited) while at most ``unhealthy_cluster_threshold`` of
  the clusters are unhealthy; above it ``secondary_eviction_rate_per_second`` (0 = paused): when most of
  the fleet looks down at once, the federation's own network is the likelier culprit. Entering and
  leaving that state is an event and a history row, not a log line per pass.
- The placement read is the binding's ``spec.placement`` (its tolerations include the defaults the
  detector adds), so what the scheduler placed by is what eviction judges by.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from federation.controllers import isolation
from federation.controllers.idle_gate import Probe
from federation.controllers.ratelimit import TokenBucket
from federation.controllers.runtime import Clock, Outcome
from federation.model import failover
from federation.model.placement import Taint, Toleration
from federation.settings import FailoverSettings
from federation.store import bulkflush, probes
from federation.store.bindings import BindingRepository
from federation.store.db import UnitOfWork
from federation.store.dialect import among
from federation.store.events import EventEntry, EventRepository, InvolvedObject
from federation.store.history import EVICTED, EVICTION_PAUSED, HistoryEntry, HistoryRepository
from federation.store.manifest import join, split
from federation.store.tables import BindingTargetClusterRow, ClusterRow, ResourceBindingRow

log = logging.getLogger(__name__)

EVENT_SOURCE = "taint-manager"
BINDING_KINDS = ("ResourceBinding", "ClusterResourceBinding")


@dataclass(frozen=True, slots=True)
class ClusterView:
    name: str
    taints: tuple[Taint, ...]
    ready: bool | None

    @property
    def no_execute(self) -> tuple[Taint, ...]:
        return tuple(t for t in self.taints if t.effect == "NoExecute")


@dataclass(frozen=True, slots=True)
class Candidate:
    binding_id: int
    resource_version: int
    cluster: str


@dataclass
class TaintManager:
    uow: UnitOfWork
    clock: Clock
    settings: FailoverSettings
    name: str = "taint-manager"
    watches: frozenset[str] = frozenset({"Cluster", *BINDING_KINDS})
    interval_seconds: float = field(init=False)
    limiter: TokenBucket = field(init=False)
    # (binding id, cluster) → (resourceVersion, taints fingerprint, when to look again or None: never).
    _judged: dict[tuple[int, str], tuple[int, str, datetime | None]] = field(default_factory=dict)
    _disrupted: bool = False

    def __post_init__(self) -> None:
        self.interval_seconds = self.settings.interval_seconds
        self.limiter = TokenBucket(self.settings.eviction_rate_per_second)

    def pending(self) -> Probe:
        """The runner's idle probe: a cluster that may carry a NoExecute taint (or memos to clear)."""
        if not self.settings.enabled:
            return False
        return True if self._judged else probes.clusters_maybe_no_execute()

    def reconcile(self) -> Outcome:
        if not self.settings.enabled:
            return Outcome()
        now = self.clock.now()
        clusters = self._clusters()
        tainted = {c.name: c for c in clusters if c.no_execute}
        if not tainted:
            self._judged.clear()
            return Outcome()
        self._pace(clusters, now)
        due = self._due(self._candidates(list(tainted)), tainted, now)
        if not due:
            return Outcome()
        evicted = self._judge_and_evict(due, tainted, now)
        return Outcome.of(evicted, *BINDING_KINDS)

    # -- reads -------------------------------------------------------------------------------------------

    def _clusters(self) -> list[ClusterView]:
        with self.uow() as session:
            rows = session.execute(select(ClusterRow.name, ClusterRow.taints, ClusterRow.ready)).all()
        return [ClusterView(name, _taints(name, raw), ready) for name, raw, ready in rows]

    def _candidates(self, clusters: Sequence[str]) -> list[Candidate]:
        statement = (
            select(
                ResourceBindingRow.id,
                ResourceBindingRow.resource_version,
                BindingTargetClusterRow.cluster_name,
            )
            .join(ResourceBindingRow, BindingTargetClusterRow.binding_id == ResourceBindingRow.id)
            .where(BindingTargetClusterRow.cluster_name.in_(list(clusters)))
            .order_by(ResourceBindingRow.id)
        )
        with self.uow() as session:
            return [Candidate(*row) for row in session.execute(statement)]

    def _due(
        self, candidates: Sequence[Candidate], tainted: Mapping[str, ClusterView], now: datetime
    ) -> list[Candidate]:
        """The candidates to judge now; forgets judgements of bindings no longer on a tainted cluster."""
        current = {(c.binding_id, c.cluster) for c in candidates}
        for key in [k for k in self._judged if k not in current]:
            del self._judged[key]
        due = []
        for candidate in candidates:
            memo = self._judged.get((candidate.binding_id, candidate.cluster))
            if memo is None or memo[:2] != (
                candidate.resource_version,
                _fingerprint(tainted[candidate.cluster]),
            ):
                due.append(candidate)  # written since, or its cluster's taints moved
            elif memo[2] is not None and memo[2] <= now:
                due.append(candidate)  # its toleration ran out
        return due

    # -- judge and evict --------------------------------------------------------------------------------

    def _judge_and_evict(
        self, due: Sequence[Candidate], tainted: Mapping[str, ClusterView], now: datetime
    ) -> int:
        with self.uow() as session:
            rows, bindings = _load(session, sorted({c.binding_id for c in due}))
            planned: list[Planned] = []
            for candidate in due:
                binding = bindings.get(candidate.binding_id)
                if binding is None:
                    continue
                cluster = tainted[candidate.cluster]
                verdict = failover.taint_verdict(cluster.no_execute, _tolerations(binding), now)
                if not verdict.evict or not self.limiter.take(now):
                    at = verdict.at if not verdict.evict else now  # rate-limited: again next pass
                    key = (candidate.binding_id, candidate.cluster)
                    self._judged[key] = (candidate.resource_version, _fingerprint(cluster), at)
                    continue
                purge = cluster_purge_mode(binding, self.settings.no_execute_taint_eviction_purge_mode)
                planned.append(Planned(candidate.binding_id, cluster.name, verdict, purge))
            if not planned:
                return 0
            evicted = isolation.batch_or_each(
                session,
                functools.partial(_evict_batch, session, rows, bindings, planned, now),
                functools.partial(self._evict_each, session, bindings, planned, now),
                "taint manager",
            )
            # Same transaction as the evictions (a failed one has no row): one statement for the lot.
            HistoryRepository(session).record(evicted)
        return len(evicted)

    def _evict_each(
        self, session: Session, bindings: dict[int, dict[str, Any]], planned: Sequence[Planned], now: datetime
    ) -> list[HistoryEntry]:
        """The evictions one savepoint each: a binding that cannot be evicted says why and waits."""
        evicted: list[HistoryEntry] = []
        for step in planned:
            binding = bindings[step.binding_id]
            work = functools.partial(_evict, session, binding, step, now)
            outcome = isolation.isolated(session, work)
            if isinstance(outcome, isolation.Failed):
                isolation.record_failure(
                    session, _involved(binding), outcome, reason="EvictFailed", source=EVENT_SOURCE, now=now
                )
            elif outcome is not None:
                # The binding as written: a second tainted cluster of it this pass starts from here.
                bindings[step.binding_id], entry = outcome
                evicted.append(entry)
        return evicted

    # -- pace: rate limit and disruption guard ----------------------------------------------------------

    def _pace(self, clusters: Sequence[ClusterView], now: datetime) -> None:
        unhealthy = sum(1 for c in clusters if c.ready is not True)
        disrupted = bool(clusters) and unhealthy / len(clusters) > self.settings.unhealthy_cluster_threshold
        rate = (
            self.settings.secondary_eviction_rate_per_second
            if disrupted
            else self.settings.eviction_rate_per_second
        )
        self.limiter.set_rate(rate, paused=disrupted and rate == 0)
        if disrupted != self._disrupted:
            self._disrupted = disrupted
            self._say_disrupted(disrupted, unhealthy, len(clusters), now)

    def _say_disrupted(self, disrupted: bool, unhealthy: int, total: int, now: datetime) -> None:
        secondary = self.settings.secondary_eviction_rate_per_second
        pace = f"slowed to {secondary}/s" if secondary else "paused"
        threshold = f"{self.settings.unhealthy_cluster_threshold:.0%}"
        message = (
            f"{unhealthy} of {total} clusters are unhealthy (over {threshold}): evictions {pace}"
            if disrupted
            else f"{unhealthy} of {total} clusters are unhealthy: evictions resume at the normal rate"
        )
        log.warning("taint manager: %s", message)
        with self.uow() as session:
            reason = "EvictionPaused" if disrupted else "EvictionResumed"
            involved = InvolvedObject("Federation", "federation")
            EventRepository(session).record(
                involved, "Warning" if disrupted else "Normal", reason, message, now=now, source=EVENT_SOURCE
            )
            HistoryRepository(session).record(
                [
                    HistoryEntry(
                        at=now,
                        action=EVICTION_PAUSED if disrupted else reason,
                        reason=reason,
                        producer=failover.PRODUCER_TAINT_MANAGER,
                        message=message,
                    )
                ]
            )


@dataclass(frozen=True, slots=True)
class Planned:
    """An eviction the pass decided on (judged and within the rate limit)."""

    binding_id: int
    cluster: str
    verdict: failover.TaintVerdict
    purge_mode: failover.PurgeMode


@dataclass(frozen=True, slots=True)
class Evicted:
    """One binding evicted from one cluster, in memory: its new body (without status) and what to say."""

    body: dict[str, Any]
    cluster: str
    reason: str
    producer: str
    message: str


def _eviction(binding: Mapping[str, Any], step: Planned, now: datetime) -> Evicted | None:
    """The binding evicted from ``step.cluster`` (pure), or None if it is no longer there."""
    cluster, verdict = step.cluster, step.verdict
    if cluster not in {c.get("name") for c in binding["spec"].get("clusters") or []}:
        return None
    taint = str(verdict.taint) if verdict.taint is not None else "NoExecute"
    message = f"Evicted from {cluster}: taint {taint} is not tolerated"
    eviction = failover.Eviction(
        cluster=cluster,
        reason=failover.REASON_TAINT_UNTOLERATED,
        producer=failover.PRODUCER_TAINT_MANAGER,
        message=message,
        purge_mode=step.purge_mode,
        preserved_label_state=failover.preserved_label_state(binding, cluster, "cluster"),
    )
    # ``replace`` keeps the stored status: leaving it out spares copying it (the scheduling explanation
    # makes it most of a binding's bytes).
    body = {k: v for k, v in binding.items() if k != "status"}
    body["spec"] = failover.evict_cluster(binding["spec"], eviction, now)
    return Evicted(body, cluster, eviction.reason, eviction.producer, message)


def _said(evicted: Evicted, written: Mapping[str, Any], now: datetime) -> tuple[HistoryEntry, EventEntry]:
    entry = HistoryEntry.for_binding(
        dict(written),
        at=now,
        action=EVICTED,
        cluster=evicted.cluster,
        reason=evicted.reason,
        producer=evicted.producer,
        message=evicted.message,
    )
    event = EventEntry(_involved(written), "Warning", "EvictWorkloadFromClusterSucceed", evicted.message)
    meta = written.get("metadata") or {}
    log.info(
        "taint manager: %s %s/%s: %s",
        written.get("kind"),
        meta.get("namespace") or "",
        meta.get("name"),
        evicted.message,
    )
    return entry, event


def _evict_batch(
    session: Session,
    rows: Sequence[ResourceBindingRow],
    bindings: Mapping[int, dict[str, Any]],
    planned: Sequence[Planned],
    now: datetime,
) -> list[HistoryEntry]:
    """Every planned eviction written by one flush, with one event upsert: the rows were loaded in this
    transaction, so each write carries the resourceVersion read and a concurrent writer fails the flush
    (the caller then goes one by one)."""
    by_id = {row.id: row for row in rows}
    bodies: dict[int, dict[str, Any]] = {}
    done: list[tuple[int, Evicted]] = []
    for step in planned:
        evicted = _eviction(bodies.get(step.binding_id) or bindings[step.binding_id], step, now)
        if evicted is not None:
            bodies[step.binding_id] = evicted.body  # a second tainted cluster of it starts from here
            done.append((step.binding_id, evicted))
    repo = BindingRepository(session)
    with bulkflush.deferred_children(session) as children:
        for binding_id, body in bodies.items():
            row = by_id[binding_id]
            repo.objects(row.namespace).replace_loaded(row, split(body), flush=False)
    bulkflush.flush_rows(session, [by_id[binding_id] for binding_id in bodies], children)
    said = [_said(evicted, bodies[binding_id], now) for binding_id, evicted in done]
    EventRepository(session).record_many([event for _, event in said], now=now, source=EVENT_SOURCE)
    return [entry for entry, _ in said]


def _evict(
    session: Session, binding: dict[str, Any], step: Planned, now: datetime
) -> tuple[dict[str, Any], HistoryEntry] | None:
    """Evict one binding from ``step.cluster``: (the binding as written, its history row), or None if it
    is no longer there.

    ``binding`` was read in this transaction (the batch load, or the previous eviction's result), so no
    re-read: the write carries its resourceVersion, and a concurrent writer makes it a Conflict.
    """
    evicted = _eviction(binding, step, now)
    if evicted is None:
        return None
    namespace = binding["metadata"].get("namespace") or ""
    written = BindingRepository(session).objects(namespace).replace(evicted.body)
    entry, event = _said(evicted, written, now)
    EventRepository(session).record_many([event], now=now, source=EVENT_SOURCE)
    return written, entry


def _load(session: Session, ids: Sequence[int]) -> tuple[list[ResourceBindingRow], dict[int, dict[str, Any]]]:
    """The rows and their manifests (row id → manifest), with the child rows an eviction rewrites (target
    clusters, eviction tasks) loaded up front: two statements for the batch instead of two lazy loads per
    evicted binding. The caller holds the rows for its transaction: the session keeps them only weakly,
    and each eviction's write finds them (children loaded) in it instead of building them again."""
    statement = (
        select(ResourceBindingRow)
        .where(among(session, ResourceBindingRow.id, ids))
        .order_by(ResourceBindingRow.id)
        .options(selectinload(ResourceBindingRow.targets), selectinload(ResourceBindingRow.eviction_tasks))
    )
    rows = list(session.scalars(statement))
    return rows, {row.id: join(row) for row in rows}


def cluster_purge_mode(binding: Mapping[str, Any], default: failover.PurgeMode) -> failover.PurgeMode:
    """Karmada ``getPurgeMode``: a ``spec.failover.cluster`` block decides (its empty ``purgeMode`` means
    Gracefully); without one, the configured default (``--no-execute-taint-eviction-purge-mode``)."""
    behavior = ((binding.get("spec") or {}).get("failover") or {}).get("cluster")
    if behavior is None:
        return default
    return failover.purge_mode(behavior.get("purgeMode"))


def _tolerations(binding: Mapping[str, Any]) -> list[Toleration]:
    placement = (binding.get("spec") or {}).get("placement") or {}
    result = []
    for raw in placement.get("clusterTolerations") or []:
        try:
            result.append(Toleration.model_validate(raw))
        except ValueError:
            continue  # admission refuses these; one bad entry must not stop the judgement
    return result


def _taints(cluster: str, raw: Any) -> tuple[Taint, ...]:
    taints = []
    for item in raw or []:
        try:
            taints.append(Taint.model_validate(item))
        except ValueError:
            log.warning("cluster %s has a malformed taint %r; ignored", cluster, item)
    return tuple(taints)


def _fingerprint(cluster: ClusterView) -> str:
    return "|".join(sorted(f"{t}@{t.time_added}" for t in cluster.no_execute))


def _involved(binding: Mapping[str, Any]) -> InvolvedObject:
    meta = binding.get("metadata") or {}
    return InvolvedObject(
        str(binding.get("kind") or ""),
        str(meta.get("name") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("uid") or ""),
    )
