"""Propagation, as pure functions: which policy claims a template, and the binding that
follows from the pair. No I/O; the detector reconciler reads inputs and applies the result.

Policy choice (Karmada `pkg/detector`, `getHighestPriorityPropagationPolicy`):
- A namespaced template is matched against the PropagationPolicies of its namespace first; only when
  none matches are ClusterPropagationPolicies considered. Cluster-scoped templates take only CPPs.
- Among matching policies: higher `spec.priority` wins; then the implicit priority of the best matching
  selector (explicit name 3 > labelSelector 2 > kind-wide 1); then the policy name, ascending.
- A template already claimed by a policy that still matches stays with it, unless the new winner has
  `preemption: Always` and a strictly higher priority (Karmada's preemption).

The binding copies the placement and the policy-level fields; scheduler-owned fields of an existing binding
(`clusters`, `gracefulEvictionTasks`, `rescheduleTriggeredAt`, `requiredBy`) are kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from federation.model.binding import binding_name
from federation.model.jsonvalue import clone
from federation.model.policy import PropagationSpec
from federation.model.workload import replicas_of, resource_request_of

BINDING_API_VERSION = "work.karmada.io/v1alpha2"
PP_NAME_LABEL = "propagationpolicy.karmada.io/name"
PP_NAMESPACE_LABEL = "propagationpolicy.karmada.io/namespace"
PP_ID_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_NAME_LABEL = "clusterpropagationpolicy.karmada.io/name"
CPP_ID_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
POLICY_LABELS = (PP_NAME_LABEL, PP_NAMESPACE_LABEL, PP_ID_LABEL, CPP_NAME_LABEL, CPP_ID_LABEL)

# Spec fields the detector copies from the policy onto the binding.
POLICY_FIELDS = (
    "propagateDeps",
    "failover",
    "conflictResolution",
    "schedulerName",
    "suspension",
    "preserveResourcesOnDeletion",
    "schedulePriority",
)
SCHEDULER_OWNED = ("clusters", "gracefulEvictionTasks", "rescheduleTriggeredAt", "requiredBy")


@dataclass(frozen=True, slots=True)
class Candidate:
    policy: Mapping[str, Any]
    priority: int
    implicit: int

    @property
    def name(self) -> str:
        return str(self.policy["metadata"]["name"])

    @property
    def preempts(self) -> bool:
        return (self.policy.get("spec") or {}).get("preemption") == "Always"

    def rank(self) -> tuple[int, int, str]:
        # Sorted ascending, so negate what should win when larger; names win when smaller.
        return (-self.priority, -self.implicit, self.name)


def _candidates(template: Mapping[str, Any], policies: Sequence[Mapping[str, Any]]) -> list[Candidate]:
    found = []
    for policy in policies:
        spec = PropagationSpec.model_validate(policy.get("spec") or {})
        implicit = max((s.match_priority(template) for s in spec.resource_selectors), default=0)
        if implicit:
            found.append(Candidate(policy, spec.effective_priority(), implicit))
    return sorted(found, key=Candidate.rank)


def choose_policy(
    template: Mapping[str, Any],
    policies: Sequence[Mapping[str, Any]],
    cluster_policies: Sequence[Mapping[str, Any]],
    current: tuple[str, str, str] | None = None,
) -> Mapping[str, Any] | None:
    """The policy that claims `template`; `current` is (kind, namespace, name) of today's claim, if any."""
    namespace = (template.get("metadata") or {}).get("namespace")
    local = [p for p in policies if p["metadata"].get("namespace") == namespace] if namespace else []
    ranked = _candidates(template, local) or _candidates(template, cluster_policies)
    if not ranked:
        return None
    best = ranked[0]
    holder = next((c for c in ranked if current is not None and _identity(c.policy) == current), None)
    if holder is None or holder is best:
        return best.policy
    if best.preempts and best.priority > holder.priority:
        return best.policy
    return holder.policy


def _identity(policy: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = policy["metadata"]
    return str(policy["kind"]), str(meta.get("namespace") or ""), str(meta["name"])


def claim_of(binding: Mapping[str, Any] | None) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the policy that claimed an existing binding."""
    if binding is None:
        return None
    labels = (binding.get("metadata") or {}).get("labels") or {}
    if labels.get(PP_NAME_LABEL):
        return "PropagationPolicy", str(labels.get(PP_NAMESPACE_LABEL, "")), str(labels[PP_NAME_LABEL])
    if labels.get(CPP_NAME_LABEL):
        return "ClusterPropagationPolicy", "", str(labels[CPP_NAME_LABEL])
    return None


def _policy_labels(policy: Mapping[str, Any]) -> dict[str, str]:
    meta = policy["metadata"]
    if policy["kind"] == "PropagationPolicy":
        return {
            PP_NAME_LABEL: meta["name"],
            PP_NAMESPACE_LABEL: meta.get("namespace", ""),
            PP_ID_LABEL: meta.get("uid", ""),
        }
    return {CPP_NAME_LABEL: meta["name"], CPP_ID_LABEL: meta.get("uid", "")}


def desired_binding(
    template: Mapping[str, Any], policy: Mapping[str, Any], existing: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The (Cluster)ResourceBinding for `template` claimed by `policy`, keeping `existing`'s results."""
    meta = template["metadata"]
    namespace = meta.get("namespace") or ""
    spec: dict[str, Any] = {
        "resource": _resource_ref(template),
        "placement": clone((policy.get("spec") or {}).get("placement") or {}),
    }
    replicas, request = replicas_of(template), resource_request_of(template)
    if replicas:
        spec["replicas"] = replicas
    if request:
        spec["replicaRequirements"] = {"resourceRequest": request}
    policy_spec = policy.get("spec") or {}
    spec.update({f: clone(policy_spec[f]) for f in POLICY_FIELDS if f in policy_spec})
    old_spec = (existing or {}).get("spec") or {}
    spec.update({f: clone(old_spec[f]) for f in SCHEDULER_OWNED if f in old_spec})
    old_labels = ((existing or {}).get("metadata") or {}).get("labels") or {}
    labels = {k: v for k, v in old_labels.items() if k not in POLICY_LABELS} | _policy_labels(policy)
    return {
        "apiVersion": BINDING_API_VERSION,
        "kind": "ResourceBinding" if namespace else "ClusterResourceBinding",
        "metadata": {
            "name": binding_name(meta["name"], template["kind"]),
            **({"namespace": namespace} if namespace else {}),
            "labels": labels,
            "annotations": ((existing or {}).get("metadata") or {}).get("annotations") or {},
            "ownerReferences": [_owner(template)],
        },
        "spec": spec,
    }


def _resource_ref(template: Mapping[str, Any]) -> dict[str, Any]:
    meta = template["metadata"]
    ref = {
        "apiVersion": template["apiVersion"],
        "kind": template["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "resourceVersion": str(meta.get("resourceVersion", "")),
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    return ref


def _owner(template: Mapping[str, Any]) -> dict[str, Any]:
    meta = template["metadata"]
    return {
        "apiVersion": template["apiVersion"],
        "kind": template["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def binding_changed(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether writing `desired` over `existing` changes anything (the detector writes only then).

    The template's resourceVersion is ignored: a status-only change of the template must not rewrite
    the binding (the member status flows the other way).
    """

    def comparable(obj: Mapping[str, Any]) -> tuple[Any, ...]:
        spec = clone(dict(obj.get("spec") or {}))
        spec.get("resource", {}).pop("resourceVersion", None)
        meta = obj.get("metadata") or {}
        return spec, meta.get("labels") or {}, meta.get("ownerReferences") or []

    return comparable(existing) != comparable(desired)
