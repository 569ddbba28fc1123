"""Failover decisions, pure: when a NoExecute taint evicts, how an eviction rewrites a binding's spec, and
when a graceful-eviction task may go (Karmada's taint manager, ``GracefulEvictCluster`` and
``assessEvictionTasks``; karmada-semantics.md §4 to §6).

Invariants:
- No I/O, no clock: ``now`` is an argument; the same inputs always give the same answer.
- Bindings are plain manifests (``dict``): the functions return new dicts and never mutate their input.
- Safety beyond Karmada: a task is never "healthy-assessed" away while the new placement is empty or not
  every target reports Healthy (Karmada counts an empty ``spec.clusters`` as healthy, and users lost
  their last running copy to it: karmada#7455, #5150); its timeout then waits too (``last_copy``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from federation.model.jsonvalue import clone
from federation.model.placement import Taint, Toleration, untolerated_taints

NOT_READY_TAINT_KEY = "cluster.karmada.io/not-ready"
UNREACHABLE_TAINT_KEY = "cluster.karmada.io/unreachable"

REASON_TAINT_UNTOLERATED = "TaintUntolerated"
REASON_APPLICATION_FAILURE = "ApplicationFailure"
PRODUCER_TAINT_MANAGER = "TaintManager"
PRODUCER_APPLICATION_FAILOVER = "resource-binding-application-failover-controller"

PurgeMode = Literal["Directly", "Gracefully", "Never"]
# Karmada's spellings before v1.15 (deprecated aliases until v1.19); manifests copied from old posts use them.
PURGE_ALIASES: dict[str, PurgeMode] = {
    "": "Gracefully",
    "Gracefully": "Gracefully",
    "Graciously": "Gracefully",
    "Directly": "Directly",
    "Immediately": "Directly",
    "Never": "Never",
}


def purge_mode(value: Any) -> PurgeMode:
    """The canonical purge mode of a task or policy field (unknown or empty → Gracefully)."""
    return PURGE_ALIASES.get(str(value or ""), "Gracefully")


# -- default tolerations (Karmada's policy webhook, ≤ v1.13) ------------------------------------------


def with_default_tolerations(
    tolerations: Sequence[Mapping[str, Any]], not_ready_seconds: int, unreachable_seconds: int
) -> list[dict[str, Any]]:
    """The placement's tolerations plus a NoExecute toleration with a time limit for the not-ready and
    unreachable taints, each unless the placement already tolerates that taint itself."""
    result = [dict(t) for t in tolerations]
    parsed = [Toleration.model_validate(t) for t in tolerations]
    for key, seconds in (
        (NOT_READY_TAINT_KEY, not_ready_seconds),
        (UNREACHABLE_TAINT_KEY, unreachable_seconds),
    ):
        probe = Taint(key=key, effect="NoExecute")
        if not any(t.tolerates(probe) for t in parsed):
            result.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
            )
    return result


# -- the taint manager's verdict --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaintVerdict:
    """``evict``: now. Otherwise ``at`` is when to look again (None: tolerated for good)."""

    evict: bool
    at: datetime | None = None
    taint: Taint | None = None


TOLERATED_FOREVER = TaintVerdict(False)


def taint_verdict(taints: Sequence[Taint], tolerations: Sequence[Toleration], now: datetime) -> TaintVerdict:
    """Karmada ``needEvictionWithCurrentTime``: an untolerated NoExecute taint evicts at once; otherwise
    the earliest ``timeAdded + tolerationSeconds`` over the tolerations in use (0 or less: at once); a taint
    without ``timeAdded`` sets no deadline."""
    no_execute = [t for t in taints if t.effect == "NoExecute"]
    if not no_execute:
        return TOLERATED_FOREVER
    untolerated = untolerated_taints(no_execute, tolerations, ("NoExecute",))
    if untolerated:
        return TaintVerdict(True, now, untolerated[0])
    earliest: tuple[datetime, Taint] | None = None
    for taint in no_execute:
        if taint.time_added is None:
            continue  # Karmada ``GetMinTolerationTimeWithCurrentTime``: never triggers (tolerated for good)
        for toleration in tolerations:
            if toleration.toleration_seconds is None or not toleration.tolerates(taint):
                continue
            trigger = taint.time_added + timedelta(seconds=max(toleration.toleration_seconds, 0))
            if earliest is None or trigger < earliest[0]:
                earliest = (trigger, taint)
    if earliest is None:
        return TOLERATED_FOREVER
    return TaintVerdict(earliest[0] <= now, earliest[0], earliest[1])


# -- GracefulEvictCluster ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Eviction:
    """What to write into the task for one evicted cluster."""

    cluster: str
    reason: str
    producer: str
    message: str = ""
    purge_mode: PurgeMode = "Gracefully"
    grace_period_seconds: int | None = None
    suppress_deletion: bool | None = None
    preserved_label_state: Mapping[str, str] | None = None


def evict_cluster(spec: Mapping[str, Any], eviction: Eviction, now: datetime) -> dict[str, Any]:
    """Karmada ``GracefulEvictCluster``: drop the cluster from ``spec.clusters`` and, unless a task for it
    exists already, append one; ``Never`` keeps the old copy until a user flips ``suppressDeletion``."""
    new = clone(dict(spec))
    clusters = [c for c in new.get("clusters") or [] if isinstance(c, Mapping)]
    evicted = next((c for c in clusters if c.get("name") == eviction.cluster), None)
    new["clusters"] = [c for c in clusters if c is not evicted]
    tasks = list(new.get("gracefulEvictionTasks") or [])
    if any(isinstance(t, Mapping) and t.get("fromCluster") == eviction.cluster for t in tasks):
        new["gracefulEvictionTasks"] = tasks
        return new
    tasks.append(_task(eviction, int((evicted or {}).get("replicas") or 0), clusters, now))
    new["gracefulEvictionTasks"] = tasks
    return new


def _task(
    eviction: Eviction, replicas: int, before: Sequence[Mapping[str, Any]], now: datetime
) -> dict[str, Any]:
    task: dict[str, Any] = {
        "fromCluster": eviction.cluster,
        "purgeMode": eviction.purge_mode,
        "reason": eviction.reason,
        "producer": eviction.producer,
        "clustersBeforeFailover": [str(c.get("name")) for c in before],
        "creationTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if replicas:
        task["replicas"] = replicas
    if eviction.message:
        task["message"] = eviction.message[:1024]
    if eviction.purge_mode == "Never":
        task["suppressDeletion"] = True
    elif eviction.suppress_deletion is not None:
        task["suppressDeletion"] = eviction.suppress_deletion
    elif eviction.grace_period_seconds is not None and eviction.purge_mode == "Gracefully":
        task["gracePeriodSeconds"] = eviction.grace_period_seconds
    if eviction.preserved_label_state:
        task["preservedLabelState"] = dict(eviction.preserved_label_state)
    return task


# -- assessEvictionTasks ----------------------------------------------------------------------------------

Removal = Literal["Healthy", "Timeout", "Confirmed"]


@dataclass(frozen=True, slots=True)
class Assessment:
    """Which tasks go (and why), which stay, and when to look again (None: on the next change only)."""

    kept: tuple[Mapping[str, Any], ...]
    removed: tuple[tuple[Mapping[str, Any], Removal], ...]
    next_at: datetime | None
    # True while no other cluster runs the workload healthy: the old copies are the last ones.
    last_copy: bool


def assess_tasks(binding: Mapping[str, Any], default_timeout_seconds: float, now: datetime) -> Assessment:
    """Karmada ``assessEvictionTasks`` with the last-copy guard (module invariants)."""
    spec = binding.get("spec") or {}
    tasks = [t for t in spec.get("gracefulEvictionTasks") or [] if isinstance(t, Mapping)]
    targets = [str(c.get("name")) for c in spec.get("clusters") or [] if isinstance(c, Mapping)]
    health = _health(binding)
    scheduled = _scheduled(binding)
    all_healthy = scheduled and bool(targets) and all(health.get(c) == "Healthy" for c in targets)
    last_copy = not any(health.get(c) == "Healthy" for c in targets) or not scheduled
    kept: list[Mapping[str, Any]] = []
    removed: list[tuple[Mapping[str, Any], Removal]] = []
    next_at: datetime | None = None
    for task in tasks:
        verdict, deadline = _assess_one(task, default_timeout_seconds, now, all_healthy, last_copy)
        if verdict is None:
            kept.append(task)
            if deadline is not None and (next_at is None or deadline < next_at):
                next_at = deadline
        else:
            removed.append((task, verdict))
    return Assessment(tuple(kept), tuple(removed), next_at, last_copy and bool(kept))


def _assess_one(
    task: Mapping[str, Any], default_timeout: float, now: datetime, all_healthy: bool, last_copy: bool
) -> tuple[Removal | None, datetime | None]:
    """(why it goes, or None to keep it; when its timeout falls, for a kept task that has one)."""
    suppress = task.get("suppressDeletion")
    if suppress is True:
        return None, None
    if suppress is False:
        return "Confirmed", None
    if all_healthy:
        return "Healthy", None
    created = _timestamp(task.get("creationTimestamp")) or now
    grace = task.get("gracePeriodSeconds")
    deadline = created + timedelta(seconds=float(grace if grace is not None else default_timeout))
    if last_copy and purge_mode(task.get("purgeMode")) != "Directly":
        return None, None  # the guard: no timeout while nothing else runs it; a health change wakes it
    if now >= deadline:
        return "Timeout", None
    return None, deadline


def _health(binding: Mapping[str, Any]) -> dict[str, str]:
    items = (binding.get("status") or {}).get("aggregatedStatus") or []
    return {
        str(i.get("clusterName")): str(i.get("health") or "Unknown")
        for i in items
        if isinstance(i, Mapping) and i.get("applied") is not False
    }


def _scheduled(binding: Mapping[str, Any]) -> bool:
    observed = (binding.get("status") or {}).get("schedulerObservedGeneration")
    return observed is not None and observed == (binding.get("metadata") or {}).get("generation")


def _timestamp(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


# -- state preservation (Karmada ``statePreservation.rules``) ---------------------------------------------


def preserved_label_state(
    binding: Mapping[str, Any], cluster: str, which: Literal["cluster", "application"]
) -> dict[str, str] | None:
    """``aliasLabelName → value`` read by each rule's ``jsonPath`` from the workload's status on the
    evicted cluster (``aggregatedStatus``); None without rules. A path that finds nothing is left out."""
    behavior = ((binding.get("spec") or {}).get("failover") or {}).get(which) or {}
    rules = (behavior.get("statePreservation") or {}).get("rules") or []
    if not rules:
        return None
    items = (binding.get("status") or {}).get("aggregatedStatus") or []
    status = next(
        (i.get("status") for i in items if isinstance(i, Mapping) and i.get("clusterName") == cluster), None
    )
    state: dict[str, str] = {}
    for rule in rules:
        value = json_path(status, str(rule.get("jsonPath") or ""))
        if value is not None and rule.get("aliasLabelName"):
            state[str(rule["aliasLabelName"])] = value if isinstance(value, str) else json.dumps(value)
    return state


def json_path(document: Any, path: str) -> Any:
    """The subset of kubectl's JSONPath that state preservation rules use: ``{.a.b}``, ``{.items[0].c}``."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    current = document
    for part in [p for p in text.lstrip(".").replace("[", ".[").split(".") if p]:
        if part.startswith("[") and part.endswith("]"):
            index = part[1:-1]
            if not index.lstrip("-").isdigit() or not isinstance(current, list):
                return None
            position = int(index)
            current = current[position] if -len(current) <= position < len(current) else None
        elif isinstance(current, Mapping):
            current = current.get(part)
        else:
            return None
        if current is None:
            return None
    return current
