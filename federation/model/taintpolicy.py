"""Karmada's ``ClusterTaintPolicy`` (``policy.karmada.io/v1alpha1``, cluster-scoped, v1.14+): taints set on
clusters from their status conditions, and its pure evaluation (karmada-semantics.md §3.4).

Invariants:
- A policy applies to the clusters its ``targetClusters`` affinity selects (none: every cluster).
- ``addOnConditions`` all match (AND) → each of ``taints`` missing by (key, effect) is added with
  ``timeAdded = now``; existing taints keep their ``timeAdded``. ``removeOnConditions`` all match → the
  policy's taints (by key and effect) are removed. An empty condition list never matches; a condition
  type the cluster does not report makes both ``In`` and ``NotIn`` false.
- Policies are applied in ``creationTimestamp`` order (then name), each to the previous one's result.
- Deleting a policy never removes the taints it set.
- Pure: no I/O, no clock (``now`` is an argument).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, StrictStr

from federation.model.base import KubeModel
from federation.model.meta import FieldError, ObjectMeta, duplicate, required
from federation.model.placement import ClusterAffinity, TaintEffect

DEFAULT_POLICY_PREFIX = "federation-default"
NOT_READY_TAINT_KEY = "cluster.karmada.io/not-ready"
UNREACHABLE_TAINT_KEY = "cluster.karmada.io/unreachable"


class MatchCondition(KubeModel):
    condition_type: StrictStr = Field(min_length=1)
    operator: Literal["In", "NotIn"]
    status_values: tuple[StrictStr, ...] = Field(min_length=1)

    def matches(self, conditions: Mapping[str, str]) -> bool:
        status = conditions.get(self.condition_type)
        if status is None:
            return False
        return (status in self.status_values) == (self.operator == "In")


class PolicyTaint(KubeModel):
    key: StrictStr = Field(min_length=1)
    effect: TaintEffect
    value: StrictStr | None = None


class ClusterTaintPolicySpec(KubeModel):
    target_clusters: ClusterAffinity | None = None
    add_on_conditions: tuple[MatchCondition, ...] | None = None
    remove_on_conditions: tuple[MatchCondition, ...] | None = None
    taints: tuple[PolicyTaint, ...] = Field(min_length=1)


class ClusterTaintPolicy(KubeModel):
    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["ClusterTaintPolicy"] = "ClusterTaintPolicy"
    metadata: ObjectMeta
    spec: ClusterTaintPolicySpec


def default_policies() -> list[dict[str, Any]]:
    """The policies shipped at first start (editable, deletable), Karmada's documented pair: Ready=False →
    ``not-ready:NoExecute``, Ready=Unknown → ``unreachable:NoExecute``, each removed on Ready=True."""

    def policy(name: str, key: str, status: str) -> dict[str, Any]:
        spec = {
            "addOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": [status]}],
            "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
            "taints": [{"key": key, "effect": "NoExecute"}],
        }
        return {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterTaintPolicy",
            "metadata": {"name": name},
            "spec": spec,
        }

    return [
        policy(f"{DEFAULT_POLICY_PREFIX}-not-ready", NOT_READY_TAINT_KEY, "False"),
        policy(f"{DEFAULT_POLICY_PREFIX}-unreachable", UNREACHABLE_TAINT_KEY, "Unknown"),
    ]


def cluster_conditions(cluster: Mapping[str, Any]) -> dict[str, str]:
    """type → status of a cluster's ``status.conditions``."""
    items = (cluster.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): str(c.get("status")) for c in items if isinstance(c, Mapping)}


def applies_to(policy: ClusterTaintPolicySpec, cluster: Mapping[str, Any]) -> bool:
    if policy.target_clusters is None:
        return True
    meta, spec = cluster.get("metadata") or {}, cluster.get("spec") or {}
    zones = list(spec.get("zones") or ([spec["zone"]] if spec.get("zone") else []))
    return policy.target_clusters.matches_cluster(
        str(meta.get("name") or ""),
        meta.get("labels") or {},
        provider=str(spec.get("provider") or ""),
        region=str(spec.get("region") or ""),
        zones=zones,
    )


def planned_taints(
    cluster: Mapping[str, Any], policies: Sequence[ClusterTaintPolicySpec], stamp: str
) -> list[dict[str, Any]]:
    """The cluster's ``spec.taints`` after every policy (in the order given) had its say."""
    taints = [dict(t) for t in (cluster.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
    conditions = cluster_conditions(cluster)
    for policy in policies:
        if not applies_to(policy, cluster):
            continue
        if _all_match(policy.add_on_conditions, conditions):
            taints = _added(taints, policy.taints, stamp)
        if _all_match(policy.remove_on_conditions, conditions):
            wanted = {(t.key, t.effect) for t in policy.taints}
            taints = [t for t in taints if (t.get("key"), t.get("effect")) not in wanted]
    return taints


def _all_match(conditions: Sequence[MatchCondition] | None, reported: Mapping[str, str]) -> bool:
    return bool(conditions) and all(c.matches(reported) for c in conditions or ())


def _added(taints: list[dict[str, Any]], wanted: Sequence[PolicyTaint], stamp: str) -> list[dict[str, Any]]:
    present = {(t.get("key"), t.get("effect")) for t in taints}
    result = list(taints)
    for taint in wanted:
        if (taint.key, taint.effect) in present:
            continue
        added: dict[str, Any] = {"key": taint.key, "effect": taint.effect, "timeAdded": stamp}
        if taint.value:
            added["value"] = taint.value
        result.append(added)
        present.add((taint.key, taint.effect))
    return result


def spec_rules(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """Beyond the shape: Karmada's webhook refuses two taints with the same key and effect, and a policy
    that can never act (no condition list at all)."""
    errors: list[FieldError] = []
    seen: set[tuple[Any, Any]] = set()
    for index, taint in enumerate(spec.get("taints") or []):
        if not isinstance(taint, Mapping):
            continue
        identity = (taint.get("key"), taint.get("effect"))
        if identity in seen:
            errors.append(duplicate(f"{path}.taints[{index}]", f"{identity[0]}:{identity[1]}"))
        seen.add(identity)
    if not spec.get("addOnConditions") and not spec.get("removeOnConditions"):
        errors.append(
            required(f"{path}.addOnConditions", "addOnConditions or removeOnConditions must be set")
        )
    return errors
