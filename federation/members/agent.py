"""The pull-mode agent (Karmada's karmada-agent): runs beside a member cluster the control plane cannot
reach, and does for it what work sync and cluster status do for Push clusters.

One pass (`run_once`): renew the cluster's lease, list the Works of `karmada-es-<cluster>`, apply new or
changed manifests to the member (server-side apply), delete the member objects of tombstoned Works
(`metadata.deletionTimestamp`) and then the Works themselves (`finalize`), delete member objects whose
Work is gone altogether, report each Work's status, and (every status interval) the Cluster's resource
summary.

Invariants:
- It talks to the federation only through `AgentApi` with an agent token bound to its cluster, and to the
  member only through a member client; it imports nothing of the API, controllers or store.
- An unchanged Work (same manifest hash as recorded, member object present with that hash) causes no
  member write; a Work status or Cluster status equal to the stored one causes no API write.
- Deletion happens only after a complete, successful listing of the Works: an API outage never makes
  the agent delete member objects.
- The lease is renewed on its own thread every `lease_duration / 4`, so a slow member never lets the
  heartbeat lapse. The server stamps renewals with its own clock (no clock-skew between agent and
  server affects staleness).
- Of the Cluster's conditions the agent writes only `CompleteAPIEnablements` (as Karmada's agent does):
  Ready for a Pull cluster follows lease freshness, which the control plane's cluster status
  controller decides.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from federation.members.agent_api import AgentApi, AgentApiError
from federation.members.agent_member import AppliedRecord, Recorded, rebuild_record
from federation.members.agent_status import (
    ManifestOutcome,
    ObjectKey,
    WorkRef,
    hash_of,
    identifier,
    manifest_hash,
    member_manifest,
    suspended_status,
    unmarked_manifest,
    with_enablements_condition,
    work_status,
)
from federation.members.client import KubernetesMemberClient
from federation.members.errors import MemberError
from federation.model.work import execution_namespace

log = logging.getLogger(__name__)

Body = dict[str, Any]


def default_holder() -> str:
    """Karmada's agent identity shape: `<hostname>_<uuid>`."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """One agent: which cluster, how to reach the federation, the member kubeconfig, and its timing."""

    cluster: str
    server: str
    token: str
    kubeconfig: dict[str, Any]
    context: str | None = None
    lease_duration_seconds: int = 40  # Karmada's --cluster-lease-duration; renewed every quarter of it
    sync_interval_seconds: float = 2.0
    status_interval_seconds: float = 10.0  # Karmada's --cluster-status-update-frequency
    report_cluster_status: bool = True
    request_timeout_seconds: float = 10.0
    holder: str = field(default_factory=default_holder)
    transport: httpx.BaseTransport | None = None  # tests route the API calls in-process
    # The CA that verifies the federation's HTTPS server (its kubeconfig's); None: the system roots.
    ca_pem: bytes | None = None
    insecure: bool = False  # insecure-skip-tls-verify

    @property
    def renew_interval_seconds(self) -> float:
        return self.lease_duration_seconds / 4


@dataclass(slots=True)
class PassReport:
    """What one pass did (for tests and logs)."""

    applied: list[ObjectKey] = field(default_factory=list)
    deleted: list[ObjectKey] = field(default_factory=list)
    statuses_written: list[str] = field(default_factory=list)
    finalized: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Agent:
    """The agent of one Pull cluster. `run_once` for tests; `run`/`run_in_thread` loop until stopped."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        member: KubernetesMemberClient | None = None,
        api: AgentApi | None = None,
        wall: Callable[[], datetime] = _now,
    ) -> None:
        self.config = config
        self.namespace = execution_namespace(config.cluster)
        self.member = member or KubernetesMemberClient(
            config.cluster, config.kubeconfig, context=config.context, timeout=config.request_timeout_seconds
        )
        self.api = api or AgentApi(
            config.server,
            config.token,
            config.cluster,
            timeout=config.request_timeout_seconds,
            transport=config.transport,
            ca_pem=config.ca_pem,
            insecure=config.insecure,
        )
        self.wall = wall
        self.record: AppliedRecord | None = None  # None until rebuilt from the member
        self._last_status_at: datetime | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- one pass ---------------------------------------------------------------------------------

    def run_once(self) -> PassReport:
        report = PassReport()
        self._guard(report, "renew the lease", self.renew_lease)
        self._guard(report, "sync works", lambda: self.sync_works(report))
        if self._status_due():
            self._guard(report, "report the cluster status", self.report_cluster_status)
        return report

    def _guard(self, report: PassReport, what: str, step: Callable[[], object]) -> None:
        # One failing step (API down, member down) must not stop the others or the loop.
        try:
            step()
        except (AgentApiError, MemberError) as exc:
            report.errors.append(f"{what}: {exc}")
            log.warning("agent of %s could not %s: %s", self.config.cluster, what, exc)

    def renew_lease(self) -> None:
        self.api.renew_lease(self.config.holder, self.config.lease_duration_seconds)

    def sync_works(self, report: PassReport | None = None) -> PassReport:
        report = report if report is not None else PassReport()
        works = self.api.works()  # raises before anything is deleted
        if self.record is None:
            self.record = rebuild_record(self.member, self.namespace)
        wanted: set[ObjectKey] = set()
        for work in works:
            wanted |= self._sync_work(work, report)
        self._delete_unwanted(wanted, report)
        return report

    # --- works ------------------------------------------------------------------------------------

    def _sync_work(self, work: Body, report: PassReport) -> set[ObjectKey]:
        meta, spec = work.get("metadata") or {}, work.get("spec") or {}
        ref = WorkRef(self.namespace, str(meta.get("name")))
        manifests = list((spec.get("workload") or {}).get("manifests") or [])
        keys = {ObjectKey.of(m) for m in manifests}
        if meta.get("deletionTimestamp"):
            self._retire(work, manifests, bool(spec.get("preserveResourcesOnDeletion")), report)
            return set()
        if spec.get("suspendDispatching"):
            self._report(work, suspended_status(work.get("status"), rfc3339(self.wall())), report)
            return keys | self._recorded_for(ref)  # suspended: keep what is there, change nothing
        outcomes = [self._ensure(ref, i, m, report) for i, m in enumerate(manifests)]
        self._report(work, work_status(work.get("status"), outcomes, rfc3339(self.wall())), report)
        return keys

    def _retire(self, work: Body, manifests: list[Body], preserve: bool, report: PassReport) -> None:
        """A tombstoned Work: delete (or, preserved, release) its member objects, then remove the Work."""
        released = [self._release(m, preserve, report) for m in manifests]
        if not all(released):
            return  # retried next pass; the Work stays until its objects are really gone
        try:
            self.api.finalize_work(work)
        except AgentApiError as exc:
            if exc.code not in (404, 409):
                raise
            return  # already gone, or revived by the execution controller: the next pass sees which
        report.finalized.append(str((work.get("metadata") or {}).get("name")))

    def _release(self, manifest: Body, preserve: bool, report: PassReport) -> bool:
        key = ObjectKey.of(manifest)
        namespace = key.namespace or None
        try:
            if preserve:  # keep the object, but drop the marks so no later pass deletes it
                if self.member.get(key.api_version, key.kind, namespace, key.name) is not None:
                    self.member.apply(unmarked_manifest(manifest))
            elif self.member.delete(key.api_version, key.kind, namespace, key.name):
                report.deleted.append(key)
        except (MemberError, ValueError) as exc:
            report.errors.append(f"delete {key.kind} {key.namespace}/{key.name}: {exc}")
            return False
        (self.record or {}).pop(key, None)
        return True

    def _recorded_for(self, ref: WorkRef) -> set[ObjectKey]:
        return {key for key, entry in (self.record or {}).items() if entry.work == ref}

    def _ensure(self, ref: WorkRef, ordinal: int, manifest: Body, report: PassReport) -> ManifestOutcome:
        key, wanted_hash = ObjectKey.of(manifest), manifest_hash(ref, manifest)
        ident = identifier(ordinal, manifest)
        assert self.record is not None
        try:
            current = self._current_if_unchanged(key, wanted_hash)
            if current is None:
                current = self.member.apply(member_manifest(ref, manifest))
                report.applied.append(key)
            self.record[key] = Recorded(ref, wanted_hash)
            return ManifestOutcome(ident, current)
        except (MemberError, ValueError) as exc:
            reason = exc.reason if isinstance(exc, MemberError) else str(exc)
            return ManifestOutcome(ident, None, f"{key.kind} {key.namespace}/{key.name}: {reason}")

    def _current_if_unchanged(self, key: ObjectKey, wanted_hash: str) -> Body | None:
        """The member object when it is already what the Work asks for; None means (re)apply it."""
        assert self.record is not None
        recorded = self.record.get(key)
        if recorded is None or recorded.hash != wanted_hash:
            return None
        current = self.member.get(key.api_version, key.kind, key.namespace or None, key.name)
        # Deleted or rewritten on the member behind our back: apply again.
        return current if current is not None and hash_of(current) == wanted_hash else None

    def _report(self, work: Body, status: Body, report: PassReport) -> None:
        if status == (work.get("status") or {}):
            return
        name = str((work.get("metadata") or {}).get("name"))
        try:
            self.api.put_work_status(work, status)
        except AgentApiError as exc:
            if exc.code not in (404, 409):
                raise
            return  # the Work moved or went away meanwhile; the next pass sees the new one
        report.statuses_written.append(name)

    def _delete_unwanted(self, wanted: set[ObjectKey], report: PassReport) -> None:
        assert self.record is not None
        for key in sorted(set(self.record) - wanted):
            try:
                self.member.delete(key.api_version, key.kind, key.namespace or None, key.name)
            except MemberError as exc:
                report.errors.append(f"delete {key.kind} {key.namespace}/{key.name}: {exc.reason}")
                continue
            del self.record[key]
            report.deleted.append(key)

    # --- cluster status ---------------------------------------------------------------------------

    def _status_due(self) -> bool:
        if not self.config.report_cluster_status:
            return False
        last = self._last_status_at
        return last is None or (self.wall() - last).total_seconds() >= self.config.status_interval_seconds

    def report_cluster_status(self) -> bool:
        """Merge version, API enablements and the resource summary into the Cluster's status; True if
        written. Of the conditions only CompleteAPIEnablements is touched (see the module docstring)."""
        observed = self._observed_cluster_status()
        cluster = self.api.get_cluster()
        current = cluster.get("status") or {}
        self._last_status_at = self.wall()
        merged = with_enablements_condition({**current, **observed}, rfc3339(self.wall()))
        if merged == current:
            return False
        try:
            self.api.put_cluster_status(cluster, merged)
        except AgentApiError as exc:
            if exc.code != 409:
                raise
            self._last_status_at = None  # lost a race with the status controller: retry next pass
            return False
        return True

    def _observed_cluster_status(self) -> Body:
        summary = self.member.resource_summary()
        return {
            "kubernetesVersion": self.member.version(),
            "apiEnablements": self.member.api_enablements(),
            "nodeSummary": summary.node_summary,
            "resourceSummary": summary.resource_summary,
        }

    # --- running ----------------------------------------------------------------------------------

    def run(self) -> None:
        """Loop until `stop()`: the lease on its own thread, passes every sync interval on this one."""
        self._start_thread(self._lease_loop, "lease")
        while not self._stop.is_set():
            self._guard(PassReport(), "sync works", self.sync_works)
            if self._status_due():
                self._guard(PassReport(), "report the cluster status", self.report_cluster_status)
            self._stop.wait(self.config.sync_interval_seconds)

    def _lease_loop(self) -> None:
        while not self._stop.is_set():
            self._guard(PassReport(), "renew the lease", self.renew_lease)
            self._stop.wait(self.config.renew_interval_seconds)

    def run_in_thread(self) -> Agent:
        self._start_thread(self.run, "sync")
        return self

    def _start_thread(self, target: Callable[[], None], role: str) -> None:
        thread = threading.Thread(target=target, name=f"agent-{self.config.cluster}-{role}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)
        self.api.close()
        self.member.close()
