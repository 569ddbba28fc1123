"""Kosmos ``kosmos.io/v1alpha1`` WorkloadPolicy (namespaced, short name ``wlp``) and the workloads it governs.

Shape taken from kosmos-io/kosmos ``pkg/apis/kosmos/v1alpha1/workloadpolicy_types.go`` and
``deploy/crds/kosmos.io_workloadpolicies.yaml``::

    spec:
      topologyKey: <label key>            # required
      labelSelector: <metav1.LabelSelector> # required; selects the pods (here: the workloads, by their pod
                                          #   template's labels or their own)
      allocationPolicy: [{name: <topology value>, replicas: <int32>}]   # required
      allocationType: Preferred | Required  # CRD default Preferred
      allocationMethod: Balance | Fill      # CRD default Balance

Which workload a policy governs (Kosmos binds pods, we bind workloads):
- A workload names its policy with a label, in either of Kosmos' spellings: ``workload-policy.kosmos.io``
  (the Deployment label of the Kosmos scheduler article) or ``workload-policy/kosmos.io`` (the pod label the
  Kosmos plugin reads), on the workload or on its pod template. Precedence: the workload's labels before
  the pod template's, and on one object the ``.kosmos.io`` key before the ``/kosmos.io`` one.
- Otherwise the policy's ``labelSelector`` must match the pod template's labels (what Kosmos matches: it
  selects pods) or the workload's own labels; each set is matched on its own, never merged.

Differences from Kosmos worth knowing:
- Kosmos has no ``status`` and no status subresource; neither do we (``has_status`` is False in the registry).
- Kosmos applies the policy per pod in its kube-scheduler plugin and ``topologyKey`` names a *node* label.
  Here the policy applies to whole workloads and ``topologyKey`` names a *cluster* label (the scheduling layer
  maps topology values to clusters); the manifest is unchanged.
- Kosmos' CRD does not bound ``replicas``; our validation rejects negative counts and duplicate topology
  values (both meaningless for a quota), reported at ``spec.allocationPolicy[i]...``.
- Spellings of the Kosmos article that its CRD enum would refuse are accepted: ``allocationType``
  ``require``/``required``/``preferred`` (any case) mean Required/Preferred, and the article's
  ``scheduleStrategy`` is read as ``allocationMethod`` when that is not set.

Invariants: defaults are applied by the helper methods, never written into the model; reading a template's
labels never raises (a malformed template simply has no labels there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from federation.model.base import Int32, KubeModel, StrictStr
from federation.model.labels import LabelSelector
from federation.model.meta import ObjectMeta

# The label that binds a workload to a policy by name: the Deployment form of the Kosmos article first,
# then the pod form the Kosmos plugin reads (``WorkloadPolicyLabelKey``).
POLICY_LABELS = ("workload-policy.kosmos.io", "workload-policy/kosmos.io")

# Ours: the WorkloadPolicy ("name/generation") a binding's current placement follows.
APPLIED_WORKLOAD_POLICY_ANNOTATION = "kosmos.io/applied-workload-policy"

_TYPE_SPELLINGS = {"required": "Required", "require": "Required", "preferred": "Preferred"}


def _allocation_type(value: Any) -> Any:
    """The article's spellings (``require``, ``preferred``, any case) as the CRD's enum values."""
    return _TYPE_SPELLINGS.get(value.lower(), value) if isinstance(value, str) else value


class AllocationPolicy(KubeModel):
    """Desired replicas for one topology value."""

    name: StrictStr
    replicas: Int32


class WorkloadPolicySpec(KubeModel):
    topology_key: StrictStr
    label_selector: LabelSelector
    allocation_policy: tuple[AllocationPolicy, ...]
    allocation_type: Annotated[
        Literal["Preferred", "Required", ""] | None, BeforeValidator(_allocation_type)
    ] = None
    allocation_method: Literal["Fill", "Balance", ""] | None = None
    # The Kosmos article's name for allocationMethod (its design example); allocationMethod wins.
    schedule_strategy: Literal["Fill", "Balance", ""] | None = None

    def effective_type(self) -> Literal["Preferred", "Required"]:
        """``allocationType`` after the CRD default (Preferred)."""
        return self.allocation_type or "Preferred"

    def effective_method(self) -> Literal["Fill", "Balance"]:
        """``allocationMethod`` (else the article's ``scheduleStrategy``) after the CRD default (Balance)."""
        return self.allocation_method or self.schedule_strategy or "Balance"

    def quota(self) -> dict[str, int]:
        """Topology value → desired replicas, in declaration order."""
        return {a.name: a.replicas for a in self.allocation_policy}

    def selects(self, labels: Mapping[str, str], pod_labels: Mapping[str, str] | None = None) -> bool:
        """True iff the labelSelector matches the pod template's labels or the workload's own labels."""
        if pod_labels is not None and self.label_selector.matches(pod_labels):
            return True
        return self.label_selector.matches(labels)


class WorkloadPolicy(KubeModel):
    api_version: Literal["kosmos.io/v1alpha1"] = "kosmos.io/v1alpha1"
    kind: Literal["WorkloadPolicy"] = "WorkloadPolicy"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadPolicySpec


def workload_labels(template: Mapping[str, Any]) -> dict[str, str]:
    """The workload's own ``metadata.labels`` (string values only)."""
    return _labels(template.get("metadata"))


def pod_template_labels(template: Mapping[str, Any]) -> dict[str, str] | None:
    """The labels its pods get: ``spec.template`` (Deployment, StatefulSet, DaemonSet, Job, ReplicaSet and
    CRDs of that shape), ``spec.jobTemplate.spec.template`` (CronJob), the object itself for a Pod; None
    when the workload has no pod template."""
    if template.get("kind") == "Pod" and template.get("apiVersion") == "v1":
        return workload_labels(template)
    spec = _mapping(template.get("spec"))
    pod = spec.get("template")
    if pod is None:
        pod = _mapping(_mapping(spec.get("jobTemplate")).get("spec")).get("template")
    if not isinstance(pod, Mapping):
        return None
    return _labels(pod.get("metadata"))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _labels(metadata: Any) -> dict[str, str]:
    labels = _mapping(_mapping(metadata).get("labels"))
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
