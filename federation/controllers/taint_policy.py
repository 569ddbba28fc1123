"""The ClusterTaintPolicy controller (Karmada ``pkg/controllers/taint``): cluster conditions → taints.

One pass reads every ClusterTaintPolicy and every cluster (one query each); a cluster is evaluated only
when it or the policies changed since its last evaluation, and written only when its taints change (with
the version read: a concurrent status write is a Conflict, retried next pass). Each added or removed
taint is a history row and an event on the cluster.

Invariants:
- Runs whether or not failover is enabled: taints tell the truth about clusters; the taint manager
  decides whether anything moves.
- A policy that does not parse (stored before admission refused it) is left out and said once in the
  log; it blocks no other policy and no cluster.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from federation.controllers import isolation
from federation.controllers.runtime import Clock, Outcome
from federation.model.taintpolicy import ClusterTaintPolicySpec, planned_taints
from federation.store.db import UnitOfWork
from federation.store.events import EventRepository, InvolvedObject
from federation.store.history import TAINT_ADDED, TAINT_REMOVED, HistoryEntry, HistoryRepository
from federation.store.kinds import CLUSTER_API_VERSION, POLICY_API_VERSION
from federation.store.manifest import format_timestamp
from federation.store.repository import ObjectRepository

log = logging.getLogger(__name__)

EVENT_SOURCE = "cluster-taint-policy-controller"
KIND = "ClusterTaintPolicy"


@dataclass
class TaintPolicyController:
    uow: UnitOfWork
    clock: Clock
    interval_seconds: float = 1.0
    name: str = "cluster-taint-policy"
    watches: frozenset[str] = frozenset({"Cluster", KIND})
    # cluster name → (its resourceVersion, the policies' fingerprint) at its last evaluation.
    _seen: dict[str, tuple[str, str]] = field(default_factory=dict)
    _refused: set[str] = field(default_factory=set)

    def reconcile(self) -> Outcome:
        now = self.clock.now()
        with self.uow() as session:
            policies = self._policies(session)
            fingerprint = _fingerprint(policies)
            clusters, _ = ObjectRepository(session, "Cluster", CLUSTER_API_VERSION).list()
            written = 0
            for cluster in clusters:
                name = cluster["metadata"]["name"]
                if self._seen.get(name) == (cluster["metadata"]["resourceVersion"], fingerprint):
                    continue
                work = functools.partial(self._evaluate, session, cluster, [p for _, p in policies], now)
                outcome = isolation.isolated(session, work)
                if isinstance(outcome, isolation.Failed):
                    self._seen.pop(name, None)
                    involved = InvolvedObject("Cluster", name, "", cluster["metadata"]["uid"])
                    isolation.record_failure(
                        session, involved, outcome, reason="TaintClusterFailed", source=EVENT_SOURCE, now=now
                    )
                    continue
                version, changed = outcome
                self._seen[name] = (version, fingerprint)
                written += changed
        return Outcome.of(written, "Cluster")

    def _policies(self, session: Session) -> list[tuple[str, ClusterTaintPolicySpec]]:
        """Parsable policies in creationTimestamp order (then name)."""
        items, _ = ObjectRepository(session, KIND, POLICY_API_VERSION).list()
        items.sort(key=lambda p: (str(p["metadata"].get("creationTimestamp") or ""), p["metadata"]["name"]))
        parsed = []
        for item in items:
            name = item["metadata"]["name"]
            try:
                parsed.append((name, ClusterTaintPolicySpec.model_validate(item.get("spec") or {})))
            except ValueError as exc:
                if name not in self._refused:
                    log.warning("ClusterTaintPolicy %s is left out: %s", name, exc)
                    self._refused.add(name)
        return parsed

    def _evaluate(
        self,
        session: Session,
        cluster: dict[str, Any],
        policies: Sequence[ClusterTaintPolicySpec],
        now: datetime,
    ) -> tuple[str, int]:
        """(the cluster's resourceVersion afterwards, 1 if its taints were written)."""
        meta = cluster["metadata"]
        before = list((cluster.get("spec") or {}).get("taints") or [])
        after = planned_taints(cluster, policies, format_timestamp(now))
        if after == before:
            return str(meta["resourceVersion"]), 0
        cluster["spec"] = {**(cluster.get("spec") or {}), "taints": after}
        stored = ObjectRepository(session, "Cluster", CLUSTER_API_VERSION).replace(cluster)
        self._record(session, stored, before, after, now)
        return str(stored["metadata"]["resourceVersion"]), 1

    @staticmethod
    def _record(
        session: Session,
        cluster: Mapping[str, Any],
        before: Sequence[Mapping[str, Any]],
        after: Sequence[Mapping[str, Any]],
        now: datetime,
    ) -> None:
        name = str(cluster["metadata"]["name"])
        involved = InvolvedObject("Cluster", name, "", str(cluster["metadata"].get("uid") or ""))
        old, new = _keys(before), _keys(after)
        entries = []
        for action, reason, keys in (
            (TAINT_ADDED, "TaintAdded", new - old),
            (TAINT_REMOVED, "TaintRemoved", old - new),
        ):
            for key, effect in sorted(keys):
                message = f"{reason[5:].lower()} taint {key}:{effect} on {name}"
                entries.append(
                    HistoryEntry(
                        at=now,
                        action=action,
                        cluster=name,
                        reason=reason,
                        producer=EVENT_SOURCE,
                        message=message,
                    )
                )
                EventRepository(session).record(
                    involved, "Normal", reason, message, now=now, source=EVENT_SOURCE
                )
        HistoryRepository(session).record(entries)


def _keys(taints: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(t.get("key")), str(t.get("effect"))) for t in taints}


def _fingerprint(policies: Sequence[tuple[str, ClusterTaintPolicySpec]]) -> str:
    canonical = json.dumps([(n, p.model_dump(mode="json")) for n, p in policies], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()
