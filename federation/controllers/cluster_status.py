"""Cluster status: Ready, version, API enablements, node and resource summaries, and automatic taints.

One pass (every `controllers.status_interval_seconds`):
1. Read the clusters and their leases (one short transaction).
2. Push clusters with stored credentials are observed concurrently, at most `members.max_concurrency` at a
   time and within one pass budget (probe + 2 request timeouts), so a slow or dead member never holds up the
   others: probe `/readyz` (fallback `/healthz`), and when healthy collect nodeSummary and resourceSummary.
   No transaction is open during member I/O. The summary comes from informers on the member's nodes and
   pods (`members.cluster_watch`, Karmada's node and pod informers) when the client can watch and
   `members.status_watch` is on: at rest a pass costs the member one request, the probe. Informers taking
   in their LIST (a new member or client, a start-up) are waited for, up to one request timeout, as
   Karmada waits for its caches to sync. When that runs out, a failed watch is not listed again yet, the
   member refuses them, or without watches, it is one LIST of nodes and one of pods as before.
   kubernetesVersion and apiEnablements are collected on the first healthy pass of a member (and of its
   client: new credentials may point elsewhere), on the first healthy pass after it was not, and then every
   `DISCOVERY_EVERY_PASSES`-th pass; the passes between reuse them. Why: they change only when the
   member is upgraded or an API is installed, while one collection is ~13 requests on a member serving
   discovery the classic way (/version, /api, /apis and a document per group version), which made this
   controller ~14 requests per member every 10 s at idle, against 1 now with informers (~3 averaged; 3
   and ~5 by LIST).
3. Ready is decided: Push clusters through Karmada's threshold debouncing (`members.health`) on the
   injected clock. The cache is in memory: after a restart, a cluster whose lease an earlier pass renewed
   resumes from the published Ready (Karmada would publish the first look as it is), so a failed first
   look waits for the threshold like any other flip and a restart with the members unchanged writes
   nothing but the lease; a just-joined cluster's first look is published as it is. Pull clusters by
   lease freshness (the agent renews it): fresh → True, stale beyond `monitor_grace_period_seconds` →
   Unknown (`ClusterStatusUnknown`, or `ClusterStatusNeverUpdated` when no Ready was ever posted, after a
   startup grace of 1.5 times the monitor grace, Karmada's 60s/40s).
4. The status (and Ready's automatic NoSchedule taints, semantics §3.3) is planned by pure functions and
   written only for clusters where something changed, each in its own transaction that re-reads the
   cluster, so a concurrent user edit (a taint) is never overwritten and a stable fleet costs no writes.
   Push clusters with a healthy probe get their lease renewed (one transaction for all).

Invariants:
- Collected fields are written only while the published Ready is True (Karmada keeps the previous values
  otherwise); messages are Karmada's constants, never error texts that vary per probe.
- Automatic taints match on key+effect; an added one gets `timeAdded`, an existing one keeps it.
- A Push cluster without stored credentials is a bare record (created through the generic API, not
  joined): there is nothing to probe and it is left as written.
- Clients and debounce state of clusters that are gone (unjoined, or re-joined under the same name with a
  new uid) are forgotten.
- Informers run for exactly the Push clusters observed this pass whose client can watch, through that
  client: a cluster gone, turned Pull or left without credentials has its informers stopped, a replaced
  client (rotated credentials) gets new ones, and ``close`` (the runner's stop) stops them all. An
  informer's change wakes nothing: the interval is the pace (Karmada's is 10 s too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from federation.controllers.members_access import MemberAccess
from federation.controllers.runtime import Clock, Outcome
from federation.members.client import MemberClient
from federation.members.cluster_watch import ClusterWatch, ClusterWatches, summary_of
from federation.members.errors import MemberError
from federation.members.health import (
    MESSAGE_READY,
    REASON_READY,
    ReadyCondition,
    ReadyDebouncer,
    collection_failed,
    observed_ready,
)
from federation.members.informer import can_watch
from federation.members.pool import Outcome as MemberOutcome
from federation.members.pool import run_concurrently
from federation.members.summary import ClusterSummary
from federation.settings import ControllerSettings, MemberSettings
from federation.store.clusters import ClusterRepository
from federation.store.db import UnitOfWork
from federation.store.events import EventEntry, EventRepository, InvolvedObject
from federation.store.leases import Lease, LeaseRepository
from federation.store.manifest import format_timestamp

NOT_READY_TAINT = "cluster.karmada.io/not-ready"
UNREACHABLE_TAINT = "cluster.karmada.io/unreachable"
REASON_STATUS_UNKNOWN = "ClusterStatusUnknown"
MESSAGE_STATUS_UNKNOWN = "Cluster status controller stopped posting cluster status."
REASON_NEVER_UPDATED = "ClusterStatusNeverUpdated"
MESSAGE_NEVER_UPDATED = "Cluster status controller never posted cluster status."
STARTUP_GRACE_FACTOR = (
    1.5  # Karmada: --cluster-startup-grace-period 60s over --cluster-monitor-grace-period 40s
)
READY = ReadyCondition("True", REASON_READY, MESSAGE_READY)
EVENT_SOURCE = "cluster-status-controller"
# Passes between two collections of kubernetesVersion and apiEnablements (a minute at Karmada's 10 s).
DISCOVERY_EVERY_PASSES = 6

# -- observations (member I/O) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Discovered:
    """A member's kubernetesVersion and apiEnablements as last collected, through which client, and how
    many more passes may reuse them."""

    client: MemberClient
    version: str
    enablements: list[dict[str, Any]]
    passes_left: int


@dataclass(frozen=True, slots=True)
class Observation:
    """One look at a Push member: the observed Ready, and what was collected when it was healthy."""

    condition: ReadyCondition
    version: str | None = None
    enablements: list[dict[str, Any]] | None = None
    summary: ClusterSummary | None = None
    discovered: bool = False  # version and enablements were collected now, not reused

    @property
    def healthy(self) -> bool:
        return self.condition.status == "True"


def observe(
    client: MemberClient,
    known: Discovered | None = None,
    watch: ClusterWatch | None = None,
    listing_wait_seconds: float = 0.0,
) -> Observation:
    """Probe, then collect (version and enablements only without ``known``; the summary from ``watch``
    when it can tell, waiting up to ``listing_wait_seconds`` for a LIST it is taking in, else by LIST); a
    failed collection keeps the probe's verdict (and the previous fields)."""
    result = client.probe()
    condition = observed_ready(result.online, result.healthy, result.error)
    if not result.ok:
        return Observation(condition)
    try:
        summary = summary_of(watch, client.resource_summary, listing_wait_seconds=listing_wait_seconds)
        if known is not None:
            return Observation(condition, known.version, known.enablements, summary)
        return Observation(condition, client.version(), client.api_enablements(), summary, discovered=True)
    except MemberError:
        return Observation(condition)


def next_discovered(client: MemberClient, known: Discovered | None, seen: Observation) -> Discovered | None:
    """What the next pass may reuse: nothing after a pass that was not healthy (an upgrade restarts the
    member) or when the reuse ran out; else the fields just collected, or ``known`` with one pass less."""
    if seen.summary is None or seen.version is None or seen.enablements is None:
        return None
    if seen.discovered:
        return Discovered(client, seen.version, seen.enablements, DISCOVERY_EVERY_PASSES - 1)
    if known is None or known.passes_left <= 1:
        return None
    return Discovered(client, known.version, known.enablements, known.passes_left - 1)


def _from_outcome(outcome: MemberOutcome[Observation] | None) -> Observation:
    if outcome is None:
        return Observation(observed_ready(False, False, "no answer within the probe deadline"))
    if outcome.value is not None:
        return outcome.value
    error = outcome.error
    if isinstance(error, MemberError) and error.kind in ("timeout", "unreachable"):
        return Observation(observed_ready(False, False, error.reason))
    reason = error.reason if isinstance(error, MemberError) else str(error)
    return Observation(collection_failed(reason))


# -- planning (pure) ---------------------------------------------------------------------------------


def published_ready(cluster: Mapping[str, Any]) -> ReadyCondition | None:
    for condition in (cluster.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return ReadyCondition.from_dict(dict(condition))
    return None


def pull_ready(
    lease: Lease | None,
    created: datetime,
    published: ReadyCondition | None,
    now: datetime,
    grace_seconds: float,
) -> ReadyCondition | None:
    """Ready of a Pull cluster from its lease; None means "leave it as it is" (still in startup grace)."""
    renewed = lease.renew_time if lease is not None else None
    if renewed is not None and now < renewed + timedelta(seconds=grace_seconds):
        return READY
    if renewed is None and now < created + timedelta(seconds=grace_seconds * STARTUP_GRACE_FACTOR):
        return published
    if published is None:
        return ReadyCondition("Unknown", REASON_NEVER_UPDATED, MESSAGE_NEVER_UPDATED)
    return ReadyCondition("Unknown", REASON_STATUS_UNKNOWN, MESSAGE_STATUS_UNKNOWN)


def with_condition(
    conditions: list[dict[str, Any]], kind: str, status: str, reason: str, message: str, stamp: str
) -> list[dict[str, Any]]:
    """Upsert a condition; `lastTransitionTime` moves only when its status flips."""
    previous = next((c for c in conditions if c.get("type") == kind), None)
    moved = previous is None or previous.get("status") != status
    transition = stamp if moved else (previous or {}).get("lastTransitionTime") or stamp
    condition = {"type": kind, "status": status, "reason": reason, "message": message}
    condition["lastTransitionTime"] = transition
    if previous is None:
        return [*conditions, condition]
    return [condition if c is previous else c for c in conditions]


def planned_status(
    status: Mapping[str, Any], ready: ReadyCondition, seen: Observation | None, stamp: str
) -> dict[str, Any]:
    """The status to publish: Ready, and the collected fields while Ready is True."""
    new = dict(status)
    conditions = list(status.get("conditions") or [])
    conditions = with_condition(conditions, "Ready", ready.status, ready.reason, ready.message, stamp)
    if ready.status == "True" and seen is not None and seen.summary is not None:
        new["kubernetesVersion"] = seen.version
        new["apiEnablements"] = seen.enablements
        new["nodeSummary"] = seen.summary.node_summary
        new["resourceSummary"] = seen.summary.resource_summary
        complete = ("True", "Complete", "collected complete APIs from member cluster")
        if not seen.enablements:
            complete = ("False", "Empty", "collected empty APIs from member cluster")
        conditions = with_condition(conditions, "CompleteAPIEnablements", *complete, stamp)
    new["conditions"] = conditions
    return new


def planned_taints(taints: list[dict[str, Any]], ready: str | None, stamp: str) -> list[dict[str, Any]]:
    """Karmada's `taintClusterByCondition`: False → not-ready, Unknown → unreachable, True → neither."""
    add, remove = {
        "True": ((), (NOT_READY_TAINT, UNREACHABLE_TAINT)),
        "False": ((NOT_READY_TAINT,), (UNREACHABLE_TAINT,)),
        "Unknown": ((UNREACHABLE_TAINT,), (NOT_READY_TAINT,)),
    }.get(ready or "", ((NOT_READY_TAINT,), ()))
    kept = [t for t in taints if not (t.get("key") in remove and t.get("effect") == "NoSchedule")]
    present = {(t.get("key"), t.get("effect")) for t in kept}
    added = [
        {"key": key, "effect": "NoSchedule", "timeAdded": stamp}
        for key in add
        if (key, "NoSchedule") not in present
    ]
    return kept + added


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a pass decided for one cluster (the write phase re-plans against a fresh read)."""

    name: str
    uid: str
    ready: ReadyCondition | None
    seen: Observation | None = None


def ready_event(cluster: Mapping[str, Any], ready: ReadyCondition | None) -> EventEntry | None:
    """The event that says Ready changed (None when it did not): Normal when the cluster became ready,
    Warning otherwise, with the condition's reason and message (a repeat is counted, not added)."""
    before = published_ready(cluster)
    if ready is None or (before is not None and before.status == ready.status):
        return None
    meta = cluster.get("metadata") or {}
    involved = InvolvedObject("Cluster", str(meta.get("name") or ""), "", str(meta.get("uid") or ""))
    message = (
        f"Ready is now {ready.status}: {ready.message}" if ready.message else f"Ready is now {ready.status}"
    )
    return EventEntry(involved, "Normal" if ready.status == "True" else "Warning", ready.reason, message)


def plan(
    cluster: Mapping[str, Any], verdict: Verdict, stamp: str
) -> tuple[dict[str, Any] | None, list[Any] | None]:
    """(new status or None, new taints or None): None where nothing would change."""
    status = dict(cluster.get("status") or {})
    new_status = (
        status if verdict.ready is None else planned_status(status, verdict.ready, verdict.seen, stamp)
    )
    ready = verdict.ready.status if verdict.ready is not None else None
    taints = list((cluster.get("spec") or {}).get("taints") or [])
    new_taints = planned_taints(taints, ready, stamp)
    return (new_status if new_status != status else None, new_taints if new_taints != taints else None)


# -- the reconciler ----------------------------------------------------------------------------------


@dataclass
class ClusterStatusController:
    uow: UnitOfWork
    clock: Clock
    members: MemberAccess
    timing: ControllerSettings
    member_settings: MemberSettings
    name: str = "cluster-status"
    # Interval-driven: a write of a Cluster needs no probe (join already recorded what it saw).
    watches: frozenset[str] = frozenset()
    interval_seconds: float = field(init=False)
    debouncer: ReadyDebouncer = field(init=False)
    _known: dict[str, str] = field(init=False, default_factory=dict)  # name → uid seen last pass
    _discovered: dict[str, Discovered] = field(init=False, default_factory=dict)  # name → reusable fields
    # The node and pod informers of the members watched (``members.status_watch`` and a client that can).
    informers: ClusterWatches = field(init=False, default_factory=ClusterWatches)

    def __post_init__(self) -> None:
        self.interval_seconds = self.timing.status_interval_seconds
        self.debouncer = ReadyDebouncer(
            self.timing.failure_threshold_seconds, self.timing.success_threshold_seconds
        )

    def close(self) -> None:
        """Stop the informers (the runner's stop hook)."""
        self.informers.close()

    def reconcile(self) -> Outcome:
        clusters, leases, credentialed = self._load()
        first_seen = self._forget_gone(clusters)
        managed = {_name(c): c for c in clusters if _mode(c) == "Pull" or _name(c) in credentialed}
        seen = self._observe([name for name, c in managed.items() if _mode(c) != "Pull"])
        now = self.clock.now()
        verdicts = [self._verdict(c, seen, leases, now, first_seen) for c in managed.values()]
        stamp = format_timestamp(now)
        changed = [v for v in verdicts if plan(managed[v.name], v, stamp) != (None, None)]
        written = sum(self._write(v, stamp, now) for v in changed)
        self._renew_leases([v.name for v in verdicts if v.seen is not None and v.seen.healthy], now)
        return Outcome.of(written, "Cluster")

    def _load(self) -> tuple[list[dict[str, Any]], dict[str, Lease], set[str]]:
        with self.uow() as session:
            repo = ClusterRepository(session)
            clusters = repo.all()
            credentialed = set(repo.with_credentials())
            leases = {lease.name: lease for lease in LeaseRepository(session).cluster_leases()}
        return clusters, leases, credentialed

    def _forget_gone(self, clusters: list[dict[str, Any]]) -> set[str]:
        """Forget the clusters that are gone; return the uids this instance had not seen before (every one
        on the first pass after a start)."""
        current = {_name(c): c["metadata"]["uid"] for c in clusters}
        for name, uid in self._known.items():
            if current.get(name) != uid:
                self.members.forget(name)
                self.debouncer.forget(uid)
                self._discovered.pop(name, None)
                self.informers.forget(name)
        first_seen = set(current.values()) - set(self._known.values())
        self._known = current
        return first_seen

    def _observe(self, names: list[str]) -> dict[str, Observation]:
        # A member still busy after this (probe, then collection) counts as not reachable for this pass.
        budget = self.member_settings.probe_timeout_seconds + 2 * self.member_settings.request_timeout_seconds
        clients = self.members.clients(names)  # every member's credentials in one read
        known = {name: self._reusable(name, clients[name]) for name in names}
        watched = self._watch(clients)
        # A watch still taking in its LIST is given one request timeout, then listed beside (the other).
        wait = self.member_settings.request_timeout_seconds
        outcomes = run_concurrently(
            lambda name: _observe_one(clients[name], known[name], watched.get(name), wait),
            names,
            self.member_settings.max_concurrency,
            budget,
        )
        seen = {name: _from_outcome(outcomes.get(name)) for name in names}
        for name in names:
            client = clients[name]
            kept = (
                None if isinstance(client, MemberError) else next_discovered(client, known[name], seen[name])
            )
            if kept is None:
                self._discovered.pop(name, None)
            else:
                self._discovered[name] = kept
        return seen

    def _watch(self, clients: Mapping[str, MemberClient | MemberError]) -> dict[str, ClusterWatch]:
        """The informers of every member observed that can be watched (started now if need be); those of
        every other cluster stopped."""
        watched: dict[str, ClusterWatch] = {}
        if self.member_settings.status_watch:
            for name, client in clients.items():
                if not isinstance(client, MemberError) and can_watch(client):
                    watched[name] = self.informers.ensure(name, client)  # type: ignore[arg-type]
        self.informers.retain(set(watched))
        return watched

    def _reusable(self, name: str, client: MemberClient | MemberError) -> Discovered | None:
        known = self._discovered.get(name)
        return known if known is not None and known.client is client else None

    def _verdict(
        self,
        cluster: dict[str, Any],
        seen: dict[str, Observation],
        leases: dict[str, Lease],
        now: datetime,
        first_seen: set[str],
    ) -> Verdict:
        name, uid = _name(cluster), cluster["metadata"]["uid"]
        published = published_ready(cluster)
        created = datetime.fromisoformat(cluster["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
        lease = leases.get(name)
        if _mode(cluster) == "Pull":
            grace = self.timing.monitor_grace_period_seconds
            return Verdict(name, uid, pull_ready(lease, created, published, now, grace))
        observation = seen[name]
        if uid in first_seen and published is not None and _posted_since(lease, created):
            # A restart: an earlier instance already observed this cluster (its heartbeat is in the lease)
            # and its debounce cache is lost. Resume from what it published, as if observed now, so a
            # failed first look waits for the threshold like any other flip: a restart is no news about
            # the member. A just-joined cluster (no heartbeat yet) keeps Karmada's publish-at-once.
            self.debouncer.adjust(uid, published, published, now.timestamp())
        ready = self.debouncer.adjust(uid, published, observation.condition, now.timestamp())
        return Verdict(name, uid, ready, observation)

    def _write(self, verdict: Verdict, stamp: str, now: datetime) -> int:
        with self.uow() as session:
            repo = ClusterRepository(session)
            fresh = repo.get(verdict.name)
            if fresh is None or fresh["metadata"]["uid"] != verdict.uid:
                return 0  # unjoined (or re-joined) since the pass started
            status, taints = plan(fresh, verdict, stamp)
            if status is not None:
                repo.objects.update_status("", verdict.name, status)
                said = ready_event(fresh, verdict.ready)
                if said is not None:  # only when Ready flips: rare, one upsert in this cluster's transaction
                    EventRepository(session).record_many([said], now=now, source=EVENT_SOURCE)
            if taints is not None:
                repo.set_taints(verdict.name, taints)
        return int(status is not None or taints is not None)

    def _renew_leases(self, names: list[str], now: datetime) -> None:
        if not names:
            return
        duration = int(self.timing.lease_duration_seconds)
        with self.uow() as session:
            LeaseRepository(session).renew_cluster_leases(names, now, duration)


def _posted_since(lease: Lease | None, created: datetime) -> bool:
    """Whether a status pass renewed this cluster's heartbeat since the cluster was created (a lease left
    by an unjoined namesake does not count)."""
    return lease is not None and lease.renew_time is not None and lease.renew_time >= created


def _observe_one(
    client: MemberClient | MemberError, known: Discovered | None, watch: ClusterWatch | None, wait: float
) -> Observation:
    if isinstance(client, MemberError):
        return Observation(collection_failed(client.reason))
    return observe(client, known, watch, wait)


def _name(cluster: Mapping[str, Any]) -> str:
    return str(cluster["metadata"]["name"])


def _mode(cluster: Mapping[str, Any]) -> str:
    return str((cluster.get("spec") or {}).get("syncMode") or "Push")
