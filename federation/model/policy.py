"""Karmada PropagationPolicy / ClusterPropagationPolicy (``policy.karmada.io/v1alpha1``).

Source: karmada-io/karmada ``pkg/apis/policy/v1alpha1/propagation_types.go``, ``pkg/util/selector.go``
(``ResourceMatches``, ``ResourceMatchSelectorsPriority``), ``pkg/util/helper/policy.go`` (defaults).

Invariants:
- Both kinds share ``PropagationSpec``; they differ only in scope.
- ``purgeMode`` accepts the current names (Directly, Gracefully, Never) and the pre-v1.15 names (Immediately,
  Graciously) so manifests written for older Karmada still apply; ``effective_purge_mode`` maps the old names
  to the new ones. Defaults (tolerationSeconds 300, purgeMode Gracefully, gracePeriodSeconds 600, priority 0,
  preemption Never, conflictResolution Abort, schedulerName default-scheduler) are applied by helpers, not
  written into the model.
- ``ResourceSelector.matches`` is Karmada's ``ResourceMatches``: apiVersion and kind must be equal, namespace
  when set, then a name (if set) decides alone, else the labelSelector (if set).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from federation.model.base import DOCUMENTED, Field, Int32, KubeModel, StrictBool, StrictStr
from federation.model.labels import LabelSelector
from federation.model.meta import ObjectMeta
from federation.model.placement import Placement

PurgeMode = Literal["Directly", "Gracefully", "Never", "Immediately", "Graciously", ""]
PURGE_MODES: tuple[str, ...] = ("Directly", "Gracefully", "Never", "Immediately", "Graciously")
_PURGE_ALIASES: dict[str, Literal["Directly", "Gracefully", "Never"]] = {
    "": "Gracefully",
    "Graciously": "Gracefully",
    "Immediately": "Directly",
    "Gracefully": "Gracefully",
    "Directly": "Directly",
    "Never": "Never",
}
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_GRACE_PERIOD_SECONDS = 600
DEFAULT_SCHEDULER_NAME = "default-scheduler"

# ResourceMatchSelectorsPriority: how precisely a selector matched (higher wins).
PRIORITY_MISMATCH = 0
PRIORITY_MATCH_ALL = 1
PRIORITY_MATCH_LABEL_SELECTOR = 2
PRIORITY_MATCH_NAME = 3


def _meta(template: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = template.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class ResourceSelector(KubeModel):
    api_version: StrictStr
    kind: StrictStr
    namespace: StrictStr | None = None
    name: StrictStr | None = None
    label_selector: LabelSelector | None = None

    def matches(self, template: Mapping[str, Any]) -> bool:
        """Karmada ``ResourceMatches`` against a raw template manifest."""
        return self.match_priority(template) != PRIORITY_MISMATCH

    def match_priority(self, template: Mapping[str, Any]) -> int:
        """3 by name, 2 by labelSelector, 1 by apiVersion/kind alone, 0 no match."""
        meta = _meta(template)
        if template.get("apiVersion") != self.api_version or template.get("kind") != self.kind:
            return PRIORITY_MISMATCH
        if self.namespace and meta.get("namespace", "") != self.namespace:
            return PRIORITY_MISMATCH
        if self.name:
            return PRIORITY_MATCH_NAME if meta.get("name") == self.name else PRIORITY_MISMATCH
        if self.label_selector is None:
            return PRIORITY_MATCH_ALL
        labels = meta.get("labels") or {}
        return PRIORITY_MATCH_LABEL_SELECTOR if self.label_selector.matches(labels) else PRIORITY_MISMATCH


class DecisionConditions(KubeModel):
    toleration_seconds: Int32 | None = None


class StatePreservationRule(KubeModel):
    alias_label_name: StrictStr
    json_path: StrictStr


class StatePreservation(KubeModel):
    rules: tuple[StatePreservationRule, ...]


class ApplicationFailoverBehavior(KubeModel):
    decision_conditions: DecisionConditions
    purge_mode: PurgeMode | None = None
    grace_period_seconds: Int32 | None = None
    state_preservation: StatePreservation | None = None
    # Ours, not Karmada's: the failover retry budget of the workloads this policy claims, unless a
    # workload's ``failover.federation.io/max-reschedules`` annotation says otherwise (``model/budget.py``).
    max_reschedules: Annotated[Int32, Field(ge=0)] | None = None

    def effective_purge_mode(self) -> Literal["Directly", "Gracefully", "Never"]:
        return _PURGE_ALIASES[self.purge_mode or ""]

    def effective_toleration_seconds(self) -> int:
        value = self.decision_conditions.toleration_seconds
        return DEFAULT_TOLERATION_SECONDS if value is None else value

    def effective_grace_period_seconds(self) -> int | None:
        """The grace period for Gracefully (600 when unset); None for the other modes."""
        if self.effective_purge_mode() != "Gracefully":
            return None
        return self.grace_period_seconds or DEFAULT_GRACE_PERIOD_SECONDS


class ClusterFailoverBehavior(KubeModel):
    purge_mode: Literal["Directly", "Gracefully", ""] | None = None
    state_preservation: StatePreservation | None = None


class FailoverBehavior(KubeModel):
    application: ApplicationFailoverBehavior | None = None
    cluster: ClusterFailoverBehavior | None = None


class SuspendClusters(KubeModel):
    cluster_names: tuple[StrictStr, ...] | None = None


class Suspension(KubeModel):
    dispatching: StrictBool | None = None
    dispatching_on_clusters: SuspendClusters | None = None
    scheduling: StrictBool | None = None


class SchedulePriority(KubeModel):
    priority_class_source: StrictStr
    priority_class_name: StrictStr


class PropagationSpec(KubeModel):
    """Which resource templates a policy claims and where they are propagated."""

    model_config = DOCUMENTED

    resource_selectors: tuple[ResourceSelector, ...]
    """The resource templates this policy claims (by apiVersion and kind, then name or labelSelector); an
    empty list claims nothing."""
    association: StrictBool | None = None
    """Deprecated: use propagateDeps."""
    propagate_deps: StrictBool | None = None
    """Propagate what a workload refers to (ConfigMaps, Secrets, ...) to the same clusters."""
    placement: Placement = Placement()
    """Which clusters the claimed resources go to and how their replicas are split."""
    priority: Int32 | None = None
    """Among policies that match the same resource template, the one with the highest priority claims it
    (default 0)."""
    preemption: Literal["Always", "Never", ""] | None = None
    """Always: this policy takes resource templates already claimed by a lower-priority policy. Never (the
    default): it does not."""
    dependent_overrides: tuple[StrictStr, ...] | None = None
    """OverridePolicies that must exist before this policy takes effect."""
    scheduler_name: StrictStr | None = None
    """The scheduler that schedules the claimed resources (default-scheduler)."""
    failover: FailoverBehavior | None = None
    """How workloads move away from failed clusters or failing applications; absent: no failover."""
    conflict_resolution: Literal["Abort", "Overwrite", ""] | None = None
    """When the resource already exists in a member cluster: Abort (the default) leaves it alone and reports
    the conflict, Overwrite takes it over."""
    activation_preference: Literal["Lazy", ""] | None = None
    """Lazy: a change of this policy applies to a resource template only at the template's next change."""
    suspension: Suspension | None = None
    """Suspends scheduling, or dispatching to all or some clusters."""
    preserve_resources_on_deletion: StrictBool | None = None
    """Keep the propagated resources in the member clusters when the resource template is deleted."""
    schedule_priority: SchedulePriority | None = None
    """Where the scheduling priority of the claimed workloads comes from (a PriorityClass)."""

    def effective_priority(self) -> int:
        return self.priority or 0

    def effective_preemption(self) -> Literal["Always", "Never"]:
        return self.preemption or "Never"

    def effective_conflict_resolution(self) -> Literal["Abort", "Overwrite"]:
        return self.conflict_resolution or "Abort"

    def effective_scheduler_name(self) -> str:
        return self.scheduler_name or DEFAULT_SCHEDULER_NAME

    def match_priority(self, template: Mapping[str, Any]) -> int:
        """The best selector match for a template (0 when no selector matches)."""
        return max((s.match_priority(template) for s in self.resource_selectors), default=PRIORITY_MISMATCH)


class PropagationPolicy(KubeModel):
    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["PropagationPolicy"] = "PropagationPolicy"
    metadata: ObjectMeta = ObjectMeta()
    spec: PropagationSpec


class ClusterPropagationPolicy(KubeModel):
    api_version: Literal["policy.karmada.io/v1alpha1"] = "policy.karmada.io/v1alpha1"
    kind: Literal["ClusterPropagationPolicy"] = "ClusterPropagationPolicy"
    metadata: ObjectMeta = ObjectMeta()
    spec: PropagationSpec
