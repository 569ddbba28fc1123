"""Which table stores which kind.

Karmada and Kosmos kinds have their own tables (matched by API group and kind, any version: versions
are views of one object); every other kind is a resource template, keyed by its full apiVersion too.
"""

from __future__ import annotations

from dataclasses import dataclass

from federation.store.tables import (
    ClusterPropagationPolicyRow,
    ClusterRow,
    ClusterTaintPolicyRow,
    ObjectMixin,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkloadPolicyRow,
    WorkloadRebalancerRow,
    WorkRow,
)

CLUSTER_API_VERSION = "cluster.karmada.io/v1alpha1"
POLICY_API_VERSION = "policy.karmada.io/v1alpha1"
BINDING_API_VERSION = "work.karmada.io/v1alpha2"
WORK_API_VERSION = "work.karmada.io/v1alpha1"
APPS_API_VERSION = "apps.karmada.io/v1alpha1"
KOSMOS_API_VERSION = "kosmos.io/v1alpha1"

RESOURCE_BINDING = "ResourceBinding"
CLUSTER_RESOURCE_BINDING = "ClusterResourceBinding"

_TYPED: dict[tuple[str, str], type[ObjectMixin]] = {
    ("cluster.karmada.io", "Cluster"): ClusterRow,
    ("policy.karmada.io", "PropagationPolicy"): PropagationPolicyRow,
    ("policy.karmada.io", "ClusterPropagationPolicy"): ClusterPropagationPolicyRow,
    ("policy.karmada.io", "ClusterTaintPolicy"): ClusterTaintPolicyRow,
    ("kosmos.io", "WorkloadPolicy"): WorkloadPolicyRow,
    ("apps.karmada.io", "WorkloadRebalancer"): WorkloadRebalancerRow,
    ("work.karmada.io", RESOURCE_BINDING): ResourceBindingRow,
    ("work.karmada.io", CLUSTER_RESOURCE_BINDING): ResourceBindingRow,
    ("work.karmada.io", "Work"): WorkRow,
}
# Tables holding more than one kind: rows must be filtered by kind.
_SHARED_TABLES: frozenset[type[ObjectMixin]] = frozenset({ResourceBindingRow, ResourceTemplateRow})


@dataclass(frozen=True, slots=True)
class TableChoice:
    table: type[ObjectMixin]
    match_kind: bool
    match_api_version: bool


def api_group(api_version: str) -> str:
    """``apps/v1`` -> ``apps``; ``v1`` (the core group) -> ``""``."""
    group, slash, _ = api_version.rpartition("/")
    return group if slash else ""


def table_for(api_version: str, kind: str) -> TableChoice:
    table = _TYPED.get((api_group(api_version), kind))
    if table is None:
        return TableChoice(ResourceTemplateRow, match_kind=True, match_api_version=True)
    return TableChoice(table, match_kind=table in _SHARED_TABLES, match_api_version=False)


def binding_kind(namespace: str) -> str:
    """A binding without a namespace is a ClusterResourceBinding."""
    return RESOURCE_BINDING if namespace else CLUSTER_RESOURCE_BINDING
