"""Kosmos ``kosmos.io/v1alpha1`` WorkloadPolicy (namespaced, short name ``wlp``).

Shape taken from kosmos-io/kosmos ``pkg/apis/kosmos/v1alpha1/workloadpolicy_types.go`` and
``deploy/crds/kosmos.io_workloadpolicies.yaml``::

    spec:
      topologyKey: <label key>            # required
      labelSelector: <metav1.LabelSelector> # required; selects the pods (here: the resource templates)
      allocationPolicy: [{name: <topology value>, replicas: <int32>}]   # required
      allocationType: Preferred | Required  # CRD default Preferred
      allocationMethod: Balance | Fill      # CRD default Balance

Differences from Kosmos worth knowing:
- Kosmos has no ``status`` and no status subresource; neither do we (``has_status`` is False in the registry).
- Kosmos applies the policy per pod in its kube-scheduler plugin and ``topologyKey`` names a *node* label.
  Here the policy applies to whole workloads and ``topologyKey`` names a *cluster* label (the scheduling layer
  maps topology values to clusters); the manifest is unchanged.
- Kosmos' CRD does not bound ``replicas``; our validation rejects negative counts and duplicate topology
  values (both meaningless for a quota), reported at ``spec.allocationPolicy[i]...``.

Invariants: defaults are applied by the helper methods, never written into the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from federation.model.base import Int32, KubeModel, StrictStr
from federation.model.labels import LabelSelector
from federation.model.meta import ObjectMeta


class AllocationPolicy(KubeModel):
    """Desired replicas for one topology value."""

    name: StrictStr
    replicas: Int32


class WorkloadPolicySpec(KubeModel):
    topology_key: StrictStr
    label_selector: LabelSelector
    allocation_policy: tuple[AllocationPolicy, ...]
    allocation_type: Literal["Preferred", "Required", ""] | None = None
    allocation_method: Literal["Fill", "Balance", ""] | None = None

    def effective_type(self) -> Literal["Preferred", "Required"]:
        """``allocationType`` after the CRD default (Preferred)."""
        return self.allocation_type or "Preferred"

    def effective_method(self) -> Literal["Fill", "Balance"]:
        """``allocationMethod`` after the CRD default (Balance)."""
        return self.allocation_method or "Balance"

    def quota(self) -> dict[str, int]:
        """Topology value → desired replicas, in declaration order."""
        return {a.name: a.replicas for a in self.allocation_policy}

    def selects(self, labels: Mapping[str, str]) -> bool:
        """True iff the policy's labelSelector matches a workload with these labels."""
        return self.label_selector.matches(labels)


class WorkloadPolicy(KubeModel):
    api_version: Literal["kosmos.io/v1alpha1"] = "kosmos.io/v1alpha1"
    kind: Literal["WorkloadPolicy"] = "WorkloadPolicy"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadPolicySpec
