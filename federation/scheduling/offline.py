"""Offline planning (``federation plan``): manifests + Cluster objects → the ResourceBindings the detector
and the scheduler would write, without touching anything.

Input manifests: resource templates, (Cluster)PropagationPolicies, Kosmos WorkloadPolicies and, optionally,
existing (Cluster)ResourceBindings. An existing binding is the previous state: its ``spec.clusters`` is the
previous placement, its ``spec.rescheduleTriggeredAt`` and ``status.lastScheduledTime`` decide fresh or
steady, its annotations say which placement was last applied. Other Karmada/Kosmos kinds are ignored.

Invariants:
- Detection is ``model.propagation`` (the detector's pure half), scheduling is ``engine.schedule`` with the
  scheduler's trigger and write rules (``planner``); the output is what those would store.
- Bindings are planned in input order (templates first, then bindings given without their template), and
  capacity placed by an earlier binding is assumed for the later ones (``engine.assume``), like one
  scheduler cycle. So are WorkloadPolicy counts: the existing bindings given (and ``placements``, where
  the live plan passes the stored ones) seed the ledger of what each policy's workloads run, and every
  planned binding moves in it after its decision, as the scheduler does within a batch.
- The WorkloadPolicy governing a binding is keyed and recorded as the scheduler keys and records it (the
  ``WorkloadPolicyChanged`` trigger, the applied-workload-policy annotation).
- A template's ``metadata.uid`` is the resource uid (the division tie-break input); without one, the uid of
  an existing binding's ``spec.resource.uid`` is used, else ``uuid5(NAMESPACE_URL, "<apiVersion>/<kind>/
  <namespace>/<name>")`` so the same file always plans the same way.
- Namespaced objects without a namespace are in ``default`` (as ``apply`` does).
- Pure: time comes in as ``now``; nothing is read or written.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from federation.model import kinds
from federation.model import propagation as detection
from federation.model.binding import binding_name
from federation.model.validation import validate_object
from federation.scheduling import engine, planner, snapshot
from federation.scheduling.extender import Extender
from federation.scheduling.types import ClusterSnapshot, EngineConfig
from federation.scheduling.workloadpolicy import QuotaLedger, ledger_of

POLICY_KINDS = ("PropagationPolicy", "ClusterPropagationPolicy")
BINDING_KINDS = ("ResourceBinding", "ClusterResourceBinding")
WORKLOAD_POLICY = "WorkloadPolicy"

Manifest = Mapping[str, Any]


class PlanError(ValueError):
    """The input cannot be planned; the message names every bad object and field."""


@dataclass
class PlanInputs:
    templates: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    cluster_policies: list[dict[str, Any]] = field(default_factory=list)
    workload_policies: list[dict[str, Any]] = field(default_factory=list)
    # (kind, namespace, name) → binding, in input order.
    bindings: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)


def template_uid(template: Manifest) -> str:
    """The deterministic uid of a template given without one."""
    meta = template.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    key = f"{template.get('apiVersion')}/{template.get('kind')}/{namespace}/{meta.get('name')}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, key))


def classify(manifests: Iterable[Manifest]) -> PlanInputs:
    """Sort manifests into templates, policies and bindings; PlanError lists every invalid one."""
    inputs, errors = PlanInputs(), []
    for raw in manifests:
        obj = _namespaced(copy.deepcopy(dict(raw)))
        info = kinds.by_gvk(str(obj.get("apiVersion")), str(obj.get("kind")))
        if info is None or not kinds.is_federation_kind(info):
            inputs.templates.append(obj)
            continue
        problems = validate_object(obj, info)
        if problems:
            errors += [f"{info.kind} {_name(obj)!r}: {p}" for p in problems]
            continue
        _file(inputs, info.kind, obj)
    if errors:
        raise PlanError("; ".join(errors))
    return inputs


def _name(obj: Manifest) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _namespaced(obj: dict[str, Any]) -> dict[str, Any]:
    info = kinds.by_gvk(str(obj.get("apiVersion")), str(obj.get("kind")))
    meta = obj.setdefault("metadata", {})
    if info is not None and info.namespaced and not meta.get("namespace"):
        meta["namespace"] = "default"
    return obj


def _file(inputs: PlanInputs, kind: str, obj: dict[str, Any]) -> None:
    if kind == "PropagationPolicy":
        inputs.policies.append(obj)
    elif kind == "ClusterPropagationPolicy":
        inputs.cluster_policies.append(obj)
    elif kind == WORKLOAD_POLICY:
        inputs.workload_policies.append(obj)
    elif kind in BINDING_KINDS:
        meta = obj["metadata"]
        inputs.bindings[(kind, meta.get("namespace") or "", meta["name"])] = obj


def detect(inputs: PlanInputs) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(binding, template) pairs as the detector would leave them; bindings without a template last."""
    remaining = dict(inputs.bindings)
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for template in inputs.templates:
        meta = template.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        key = (
            BINDING_KINDS[0] if namespace else BINDING_KINDS[1],
            namespace,
            binding_name(meta["name"], template["kind"]),
        )
        existing = remaining.pop(key, None)
        template = _with_uid(template, existing)
        binding = _detected(template, inputs, existing)
        if binding is not None:
            pairs.append((binding, template))
    pairs += [(binding, None) for binding in remaining.values()]
    return pairs


def _with_uid(template: dict[str, Any], existing: Manifest | None) -> dict[str, Any]:
    meta = template.setdefault("metadata", {})
    if not meta.get("uid"):
        known = ((existing or {}).get("spec") or {}).get("resource", {}).get("uid")
        meta["uid"] = known or template_uid(template)
    return template


def _detected(
    template: dict[str, Any], inputs: PlanInputs, existing: dict[str, Any] | None
) -> dict[str, Any] | None:
    policy = detection.choose_policy(
        template, inputs.policies, inputs.cluster_policies, detection.claim_of(existing)
    )
    if policy is None:
        return existing  # Karmada keeps a binding whose policy went away
    desired = detection.desired_binding(template, policy, existing)
    if existing is None:
        desired["metadata"]["generation"] = 1
        return desired
    if not detection.binding_changed(existing, desired):
        return existing
    return _over_existing(desired, existing)


def _over_existing(desired: dict[str, Any], existing: Manifest) -> dict[str, Any]:
    """The detector's replace: server metadata and status kept, generation bumped on a spec change."""
    old_meta = existing.get("metadata") or {}
    generation = int(old_meta.get("generation") or 1)
    if (existing.get("spec") or {}) != desired["spec"]:
        generation += 1
    server = {k: old_meta[k] for k in ("uid", "resourceVersion", "creationTimestamp") if k in old_meta}
    desired["metadata"] = {**desired["metadata"], **server, "generation": generation}
    if existing.get("status") is not None:
        desired["status"] = copy.deepcopy(existing["status"])
    return desired


def clusters_of(manifests: Iterable[Manifest]) -> list[ClusterSnapshot]:
    """Snapshots of Karmada Cluster objects; PlanError names a malformed one."""
    snapshots = []
    for obj in manifests:
        if obj.get("kind") != "Cluster":
            raise PlanError(
                f"the clusters file holds a {obj.get('kind')!r}; only Cluster objects belong there"
            )
        try:
            snapshots.append(snapshot.from_cluster(obj))
        except ValueError as exc:
            raise PlanError(f"Cluster {_name(obj)!r}: {exc}") from exc
    return snapshots


def schedule_binding(
    binding: Manifest,
    template: Manifest | None,
    workload_policies: Sequence[Manifest],
    clusters: Sequence[ClusterSnapshot],
    config: EngineConfig,
    now: datetime,
    extenders: Sequence[Extender] = (),
    quota: QuotaLedger | None = None,
) -> tuple[dict[str, Any], list[ClusterSnapshot]]:
    """One binding as the scheduler leaves it, and the snapshots with its new replicas assumed (and, given
    the plan's ``quota`` ledger, the binding moved in it)."""
    if planner.scheduling_suspended(binding):
        return copy.deepcopy(dict(binding)), list(clusters)
    policy = planner.workload_policy_key(planner.workload_policy_for(template, workload_policies))
    trigger = planner.scheduling_trigger(
        binding, planner.gone_clusters(binding, planner.live_clusters(clusters)), policy
    )
    if trigger is None:
        return planner.sync_observed_generation(binding), list(clusters)
    given = planner.binding_input(binding, template, workload_policies, quota, clusters)
    result = engine.schedule(given, clusters, config, extenders)
    written = planner.apply_result(binding, result, now, trigger, policy)
    if quota is not None:
        planner.record_quota(quota, binding, policy, result)
    return written, engine.assume(clusters, result, given.resource_request, given.previous)


def plan_manifests(
    manifests: Iterable[Manifest],
    clusters: Iterable[Manifest],
    config: EngineConfig | None = None,
    *,
    now: datetime,
    extenders: Sequence[Extender] = (),
    placements: Iterable[Manifest] = (),
) -> list[dict[str, Any]]:
    """The (Cluster)ResourceBindings exactly as they would be written, in planning order.

    ``placements`` are bindings not planned here whose replicas count against WorkloadPolicy quotas (the
    live plan passes the stored ones); a binding given in ``manifests`` replaces its stored self.
    """
    inputs = classify(manifests)
    snapshots = clusters_of(clusters)
    quota = ledger_of([*placements, *inputs.bindings.values()])
    planned = []
    for binding, template in detect(inputs):
        try:
            written, snapshots = schedule_binding(
                binding,
                template,
                inputs.workload_policies,
                snapshots,
                config or EngineConfig(),
                now,
                extenders,
                quota,
            )
        except ValueError as exc:
            raise PlanError(f"{binding.get('kind')} {_name(binding)!r}: {exc}") from exc
        planned.append(written)
    return planned


def as_list(items: Sequence[Manifest]) -> dict[str, Any]:
    """A Kubernetes ``List`` of the given objects."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}
