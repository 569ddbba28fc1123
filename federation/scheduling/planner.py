"""From a stored ResourceBinding to an engine input, and from an engine result back to the binding as the
scheduler writes it. Shared by the scheduler controller and ``federation plan``; pure (time is passed in).

Invariants:
- ``binding_input`` reads only the binding (``spec.resource/replicas/replicaRequirements/placement/
  clusters/gracefulEvictionTasks/rescheduleTriggeredAt``, ``status.lastScheduledTime/
  schedulerObservingAffinityName``) plus the template's labels, which choose the WorkloadPolicy, and its
  ``failover.federation.io/tried-clusters`` annotation, the clusters to avoid (``model/budget.py``), and
  its ``scheduling.federation.io/service-class`` annotation, which picks the profile (``profiles``).
  Given the cycle's ``QuotaLedger`` and clusters it adds what the policy's other workloads already run per
  topology value; ``record_quota`` moves the binding in the ledger after its decision (batch order).
- ``apply_result`` is Karmada's write (semantics §1.7): ``spec.clusters`` and the applied-placement
  annotation only when the result writes clusters (Success, NoClusterFit); the ``Scheduled`` condition
  always (``lastTransitionTime`` moves only when its status flips); ``schedulerObservedGeneration`` (the
  generation after this write: a changed ``spec.clusters`` bumps it) and ``lastScheduledTime`` only on
  Success; ``schedulerObservingAffinityName`` only when a term was chosen.
  The engine's explanation goes to ``status.schedulingExplanation``; ``federation plan`` prints it whole,
  the scheduler stores its summary there (``stored_status``) and the whole of it in the decision record.
- ``spec.clusters`` entries omit ``replicas`` when it is 0 (Karmada's ``omitempty``).
- Offline planning (``plan_manifests``) lives in ``federation.scheduling.offline``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any

from federation import jsoncodec
from federation.model import budget
from federation.model.binding import APPLIED_PLACEMENT_ANNOTATION, CONDITION_SCHEDULED
from federation.model.placement import Placement
from federation.model.workloadpolicy import APPLIED_WORKLOAD_POLICY_ANNOTATION, WorkloadPolicy
from federation.scheduling import snapshot, triggers
from federation.scheduling.filters import cluster_matches
from federation.scheduling.profiles import engine_config as engine_config  # every caller's import
from federation.scheduling.profiles import service_class_of
from federation.scheduling.types import BindingInput, ClusterSnapshot, ScheduleResult
from federation.scheduling.workloadpolicy import QuotaLedger, binding_key, policy_ref, select_policy_for

EXPLANATION_KEY = "schedulingExplanation"
SUCCESS_EVENT = "ScheduleBindingSucceed"
FAILURE_EVENT = "ScheduleBindingFailed"

Manifest = Mapping[str, Any]


@functools.lru_cache(maxsize=1024)
def format_time(value: datetime) -> str:
    """RFC 3339 in UTC, second precision (``metav1.Time``). Cached: a batch writes one instant many times."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


# -- reading a binding ----------------------------------------------------------------------------------


def _spec(binding: Manifest) -> Mapping[str, Any]:
    return binding.get("spec") or {}


def _status(binding: Manifest) -> Mapping[str, Any]:
    return binding.get("status") or {}


# Parsed placements by their JSON, shared: a scheduler pass reads the same few placements (one per policy)
# on every binding, twice, and Placements are frozen. Bounded: emptied when full.
_PLACEMENTS: dict[str | bytes, Placement | None] = {}
PLACEMENT_CACHE_LIMIT = 512


def placement_of(binding: Manifest) -> Placement:
    return _parsed(_spec(binding).get("placement") or {})


def _parsed(raw: Any) -> Placement:
    """The placement of ``raw``: one object for equal JSON (by its canonical form)."""
    try:
        key = jsoncodec.canonical(raw)
    except TypeError:  # not JSON (a caller's own objects): parsed as given, not kept
        return Placement.model_validate(raw)
    found = _PLACEMENTS.get(key)
    if found is None:
        found = Placement.model_validate(raw)
        _keep(key, found)
    return found


def applied_placement(binding: Manifest) -> Placement | None:
    """The placement of the last written schedule (annotation), None when never scheduled or unreadable.
    The same object as ``placement_of`` gives for equal JSON, so an unchanged placement is seen unchanged
    by identity (``triggers.placement_changed``) without serializing either."""
    raw = ((binding.get("metadata") or {}).get("annotations") or {}).get(APPLIED_PLACEMENT_ANNOTATION)
    if not raw:
        return None
    text = str(raw)
    if text in _PLACEMENTS:
        return _PLACEMENTS[text]
    try:
        return _keep(text, _parsed(json.loads(text)))
    except ValueError:
        return _keep(text, None)


def _keep(key: str | bytes, placement: Placement | None) -> Placement | None:
    if len(_PLACEMENTS) >= PLACEMENT_CACHE_LIMIT:
        _PLACEMENTS.clear()
    _PLACEMENTS[key] = placement
    return placement


def previous_clusters(binding: Manifest) -> dict[str, int]:
    return {str(c["name"]): int(c.get("replicas") or 0) for c in _spec(binding).get("clusters") or ()}


def is_workload(binding: Manifest) -> bool:
    spec = _spec(binding)
    return int(spec.get("replicas") or 0) > 0 or spec.get("replicaRequirements") is not None


def scheduling_suspended(binding: Manifest) -> bool:
    return bool((_spec(binding).get("suspension") or {}).get("scheduling"))


def workload_policy_for(
    template: Manifest | None, workload_policies: Sequence[Manifest]
) -> WorkloadPolicy | None:
    """The WorkloadPolicy of the template's namespace named by a binding label on the template or its pod
    template, else the first (by name) whose selector matches the pod template's labels or the template's."""
    if template is None or not workload_policies:
        return None
    meta = template.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    if not namespace:
        return None
    local = [
        WorkloadPolicy.model_validate(p)
        for p in workload_policies
        if ((p.get("metadata") or {}).get("namespace") or "") == namespace
    ]
    return select_policy_for(local, template)


def binding_input(
    binding: Manifest,
    template: Manifest | None,
    workload_policies: Sequence[Manifest] = (),
    quota: QuotaLedger | None = None,
    clusters: Sequence[ClusterSnapshot] = (),
) -> BindingInput:
    """What the engine reads of a binding (and of its template: the labels that pick a WorkloadPolicy,
    the clusters the workload already failed on); with a ``quota`` ledger and the cycle's ``clusters``,
    what the policy's other workloads hold of its counts."""
    spec, status = _spec(binding), _status(binding)
    resource = spec.get("resource") or {}
    requirements = spec.get("replicaRequirements")
    policy = workload_policy_for(template, workload_policies)
    return BindingInput(
        kind=str(resource.get("kind", "")),
        api_version=str(resource.get("apiVersion", "")),
        name=str(resource.get("name", "")),
        namespace=str(resource.get("namespace") or ""),
        uid=str(resource.get("uid") or (binding.get("metadata") or {}).get("uid") or ""),
        replicas=int(spec.get("replicas") or 0),
        resource_request=snapshot.resources(
            (requirements or {}).get("resourceRequest"), "spec.replicaRequirements.resourceRequest"
        ),
        has_replica_requirements=requirements is not None,
        placement=placement_of(binding),
        previous=previous_clusters(binding),
        fresh=triggers.reschedule_required(
            parse_time(spec.get("rescheduleTriggeredAt")), parse_time(status.get("lastScheduledTime"))
        ),
        eviction_clusters=frozenset(
            str(t["fromCluster"]) for t in spec.get("gracefulEvictionTasks") or () if t.get("fromCluster")
        ),
        observed_affinity=str(status.get("schedulerObservingAffinityName") or ""),
        workload_policy=policy.spec if policy is not None else None,
        workload_policy_used=_quota_used(binding, policy, quota, clusters),
        avoid=budget.avoid_of(template),
        service_class=service_class_of(template),
    )


def workload_policy_key(policy: WorkloadPolicy | None) -> str:
    """Which WorkloadPolicy, at which generation, governs a binding ("" for none)."""
    if policy is None:
        return ""
    return f"{policy.metadata.name}/{policy.metadata.generation or 0}"


def _quota_used(
    binding: Manifest,
    policy: WorkloadPolicy | None,
    quota: QuotaLedger | None,
    clusters: Sequence[ClusterSnapshot],
) -> dict[str, int]:
    ref = policy_ref(binding, workload_policy_key(policy))
    if policy is None or quota is None or ref is None:
        return {}
    labels = {c.name: c.labels for c in clusters}
    return quota.used_by_others(ref, binding_key(binding), policy.spec.topology_key, labels)


def record_quota(quota: QuotaLedger, binding: Manifest, policy_key: str, result: ScheduleResult) -> None:
    """After a decision: the binding now runs where ``result`` puts it, under the policy ``policy_key``
    names ("" for none). Results that keep the old placement (Unschedulable, errors) change nothing."""
    if result.writes_clusters:
        placed = {t.name: t.replicas for t in result.clusters}
        quota.place(binding_key(binding), policy_ref(binding, policy_key), placed)


def applied_workload_policy(binding: Manifest) -> str | None:
    """The WorkloadPolicy key the last successful schedule used; None when the binding never recorded one."""
    annotations = (binding.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(APPLIED_WORKLOAD_POLICY_ANNOTATION)
    return None if value is None else str(value)


def scheduling_trigger(
    binding: Manifest, gone_clusters: Collection[str] = (), workload_policy: str | None = None
) -> str | None:
    """Karmada's reason to schedule now (``triggers.needs_scheduling``), None to only sync the generation.

    Beyond Karmada: when ``workload_policy`` (the key of the WorkloadPolicy that governs the binding now)
    differs from the one its last schedule applied, the policy changed: schedule again; and while its
    counts leave replicas unplaced, every time the binding is queued (``WorkloadPolicyQuotaShort``).
    """
    spec, status = _spec(binding), _status(binding)
    recorded = applied_workload_policy(binding)
    if workload_policy is not None and recorded is not None and workload_policy != recorded:
        return "WorkloadPolicyChanged"
    if workload_policy and recorded is None and status.get("lastScheduledTime"):
        return "WorkloadPolicyChanged"
    if workload_policy and unplaced_replicas(binding) > 0:
        # Beyond Karmada: replicas a WorkloadPolicy's counts left unplaced wait for quota; a binding
        # queued again (another workload freed some) is scheduled, as kube-scheduler retries a Pending pod.
        return "WorkloadPolicyQuotaShort"
    return triggers.needs_scheduling(
        placement=placement_of(binding),
        applied_placement=applied_placement(binding),
        observed_affinity=str(status.get("schedulerObservingAffinityName") or ""),
        replicas=int(spec.get("replicas") or 0),
        is_workload=is_workload(binding),
        clusters=previous_clusters(binding),
        reschedule_triggered_at=parse_time(spec.get("rescheduleTriggeredAt")),
        last_scheduled_time=parse_time(status.get("lastScheduledTime")),
        gone_clusters=gone_clusters,
    )


def unplaced_replicas(binding: Manifest) -> int:
    """Replicas the binding's last schedule could not place (its stored explanation's summary)."""
    explanation = _status(binding).get(EXPLANATION_KEY)
    if not isinstance(explanation, Mapping):
        return 0
    unplaced = explanation.get("unplaced")
    return unplaced if isinstance(unplaced, int) and not isinstance(unplaced, bool) else 0


def frees_quota(binding: Manifest, result: ScheduleResult) -> bool:
    """Whether writing ``result`` takes replicas off a cluster the binding ran on: quota it held under
    its WorkloadPolicy becomes free for the workloads sharing it."""
    if not result.writes_clusters:
        return False
    placed = {t.name: t.replicas for t in result.clusters}
    return any(placed.get(name, 0) < count for name, count in previous_clusters(binding).items())


def gone_clusters(binding: Manifest, live: AbstractSet[str]) -> set[str]:
    """Target clusters that no longer exist or are being deleted (``live``: ``live_clusters``, one set a
    cycle's bindings share)."""
    return {name for name in previous_clusters(binding) if name not in live}


def live_clusters(clusters: Sequence[ClusterSnapshot]) -> frozenset[str]:
    """The names of the clusters that exist and are not being deleted."""
    return frozenset(c.name for c in clusters if not c.deleting)


def affected_by(placement: Mapping[str, Any], cluster: ClusterSnapshot) -> bool:
    """Whether a change of ``cluster`` can matter to a binding with this placement: no affinity at all,
    or any term (or overflow tier) matches it. A superset of Karmada's old-or-new check for the new side;
    bindings already on the cluster are re-queued separately."""
    try:
        terms = Placement.model_validate(placement).affinity_terms()
    except ValueError:
        return True
    if not terms:
        return True
    return any(
        cluster_matches(term, cluster)
        or any(cluster_matches(o, cluster) for o in term.overflow_affinities or ())
        for term in terms
    )


# -- writing a result -----------------------------------------------------------------------------------


def target_entries(result: ScheduleResult) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "replicas": t.replicas} if t.replicas else {"name": t.name} for t in result.clusters
    ]


def scheduled_condition(
    result: ScheduleResult, previous: Mapping[str, Any] | None, now: datetime
) -> dict[str, Any]:
    status = "True" if result.succeeded else "False"
    transition = format_time(now)
    if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
        transition = str(previous["lastTransitionTime"])
    return {
        "type": CONDITION_SCHEDULED,
        "status": status,
        "reason": result.result,
        "message": result.message,
        "lastTransitionTime": transition,
    }


def with_condition(
    conditions: Sequence[Mapping[str, Any]], condition: dict[str, Any]
) -> list[dict[str, Any]]:
    """``meta.SetStatusCondition``: replace the condition of that type in place, or append it."""
    if any(c.get("type") == condition["type"] for c in conditions):
        return [condition if c.get("type") == condition["type"] else dict(c) for c in conditions]
    return [*(dict(c) for c in conditions), condition]


def explanation_of(result: ScheduleResult, trigger: str | None) -> dict[str, Any]:
    explanation: dict[str, Any] = {"result": result.result, "trigger": trigger, **result.explanation}
    if result.unplaced:
        explanation["unplaced"] = result.unplaced
    if result.avoid_ignored:
        explanation["avoidIgnored"] = True
    return explanation


def apply_result(
    binding: Manifest,
    result: ScheduleResult,
    now: datetime,
    trigger: str | None = None,
    workload_policy: str = "",
) -> dict[str, Any]:
    """The binding exactly as the scheduler writes it after ``result``: a new manifest whose top level,
    metadata, spec and status are its own; below them it shares ``binding``'s values, which neither it nor
    its callers change (manifests are values), so no deep copy is made.

    ``workload_policy`` is the key of the WorkloadPolicy the result followed ("" for none), recorded with
    the applied placement so a later change of the policy is a trigger.
    """
    out = dict(binding)
    meta = out["metadata"] = dict(binding.get("metadata") or {})
    spec = out["spec"] = dict(binding.get("spec") or {})
    if result.writes_clusters:
        spec["clusters"] = target_entries(result)
        placement = jsoncodec.compact(spec.get("placement") or {})
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            APPLIED_PLACEMENT_ANNOTATION: placement,
            APPLIED_WORKLOAD_POLICY_ANNOTATION: workload_policy,
        }
    if spec != (binding.get("spec") or {}):
        # spec.clusters is spec: writing it bumps generation, and the generation observed is the new one
        # (Karmada gets there one pass later, when the bump re-queues the binding).
        meta["generation"] = int(meta.get("generation") or 1) + 1
    status = dict(out.get("status") or {})
    conditions = list(status.get("conditions") or [])
    previous = next((c for c in conditions if c.get("type") == CONDITION_SCHEDULED), None)
    status["conditions"] = with_condition(conditions, scheduled_condition(result, previous, now))
    if result.succeeded:
        status["schedulerObservedGeneration"] = int(meta.get("generation") or 1)
        status["lastScheduledTime"] = format_time(now)
    if result.affinity_name:
        status["schedulerObservingAffinityName"] = result.affinity_name
    status[EXPLANATION_KEY] = explanation_of(result, trigger)
    out["status"] = status
    return out


# The per-cluster part of an explanation: every cluster's filter verdict and scores (~250 bytes each).
PER_CLUSTER_KEY = "clusters"


def stored_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as the scheduler stores it: the explanation without its per-cluster part, which goes
    to the decision record only (written once, instead of being read and rewritten with the binding by
    every controller: at 100 clusters it is 90% of a binding's bytes)."""
    explanation = status.get(EXPLANATION_KEY)
    if not isinstance(explanation, Mapping) or PER_CLUSTER_KEY not in explanation:
        return dict(status)
    summary = {k: v for k, v in explanation.items() if k != PER_CLUSTER_KEY}
    return {**status, EXPLANATION_KEY: summary}


def sync_observed_generation(binding: Manifest) -> dict[str, Any]:
    """Nothing triggers a schedule: only ``schedulerObservedGeneration`` follows ``generation`` (a new
    manifest as ``apply_result`` makes one)."""
    out = dict(binding)
    out["metadata"] = dict(binding.get("metadata") or {})
    generation = int((out.get("metadata") or {}).get("generation") or 1)
    out["status"] = {**(out.get("status") or {}), "schedulerObservedGeneration": generation}
    return out


def event_of(result: ScheduleResult) -> tuple[str, str, str]:
    """(type, reason, message) of the event Karmada records for a schedule attempt."""
    if result.succeeded:
        return "Normal", SUCCESS_EVENT, result.message
    return "Warning", FAILURE_EVENT, result.message
