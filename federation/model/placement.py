"""Karmada ``policy.karmada.io/v1alpha1`` Placement, exactly as Karmada's Go types serialize it.

Source of truth: karmada-io/karmada ``pkg/apis/policy/v1alpha1/propagation_types.go`` and
``propagation_helper.go``; toleration semantics from Kubernetes ``core/v1`` ``Toleration.ToleratesTaint``.

Invariants:
- Field names, nesting and enum values are Karmada's (``exclude`` not ``excludeClusters``;
  ``clusterAffinities`` terms inline the ClusterAffinity fields next to ``affinityName``;
  ``overflowAffinities`` (v1.18+) is kept).
- The models only check *shape* (types, enums the CRD schema declares); the webhook rules (maxGroups >=
  minGroups, fieldSelector keys, ...) live in ``federation.model.validation`` so every bad field is reported
  at once.
- Defaults are *not* written into the model (a dump reproduces the manifest); the helper methods apply
  Karmada's defaults when asked: no ``replicaScheduling`` → Duplicated; ``replicaScheduling`` with an empty
  type → Divided (CRD default); Divided with no preference → Weighted (mutating webhook); spread constraint
  with neither field nor label → ``cluster``, minGroups 0 → 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Literal

from federation.model.base import DOCUMENTED, Int64, KubeModel, StrictStr
from federation.model.labels import LabelSelector, Requirement

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
TolerationEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""]
SpreadField = Literal["cluster", "region", "zone", "provider"]
Strategy = Literal["Duplicated", "StaticWeight", "DynamicWeight", "Aggregated"]

TAINT_EFFECTS: tuple[str, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")
FIELD_SELECTOR_KEYS: tuple[str, ...] = ("provider", "region", "zone")
SPREAD_FIELDS: tuple[str, ...] = ("cluster", "region", "zone", "provider")


class Taint(KubeModel):
    """``core/v1`` Taint as Karmada puts it on ``Cluster.spec.taints``."""

    key: StrictStr
    value: StrictStr | None = None
    effect: TaintEffect
    time_added: datetime | None = None

    def __str__(self) -> str:
        """Kubernetes' ``Taint.ToString``: ``key=value:Effect`` (``key:Effect`` when the value is empty)."""
        if self.value:
            return f"{self.key}={self.value}:{self.effect}"
        return f"{self.key}:{self.effect}"


class Toleration(KubeModel):
    """``core/v1`` Toleration (``placement.clusterTolerations``)."""

    key: StrictStr | None = None
    operator: Literal["Equal", "Exists", ""] | None = None
    value: StrictStr | None = None
    effect: TolerationEffect | None = None
    toleration_seconds: Int64 | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes ``ToleratesTaint``: empty effect matches every effect, empty key + Exists every key."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return (self.value or "") == (taint.value or "")


def untolerated_taints(
    taints: Iterable[Taint],
    tolerations: Sequence[Toleration],
    effects: Iterable[str] = ("NoSchedule", "NoExecute"),
) -> list[Taint]:
    """The taints with one of ``effects`` that no toleration tolerates (Karmada's TaintToleration filter)."""
    wanted = set(effects)
    return [t for t in taints if t.effect in wanted and not any(tol.tolerates(t) for tol in tolerations)]


class FieldSelectorRequirement(KubeModel):
    """``core/v1`` NodeSelectorRequirement; Karmada allows keys provider/region/zone and In/NotIn only."""

    key: StrictStr
    operator: StrictStr
    values: tuple[StrictStr, ...] | None = None


class FieldSelector(KubeModel):
    match_expressions: tuple[FieldSelectorRequirement, ...] | None = None


class ClusterAffinity(KubeModel):
    """Selects clusters: not in ``exclude``, labels match, fields match, and in ``clusterNames`` if given."""

    model_config = DOCUMENTED

    label_selector: LabelSelector | None = None
    """Clusters whose labels match this selector; empty or absent matches every cluster."""
    field_selector: FieldSelector | None = None
    """Clusters whose provider, region or zone match these requirements (operators In and NotIn)."""
    cluster_names: tuple[StrictStr, ...] | None = None
    """Only these clusters, when given."""
    exclude: tuple[StrictStr, ...] | None = None
    """Never these clusters, whatever else matches."""

    def matches_cluster(
        self,
        name: str,
        labels: Mapping[str, str],
        *,
        provider: str = "",
        region: str = "",
        zones: Sequence[str] = (),
    ) -> bool:
        """Karmada ``util.ClusterMatches`` (semantics §2.1); an empty affinity matches every cluster."""
        if name in (self.exclude or ()):
            return False
        if self.label_selector is not None and not self.label_selector.matches(labels):
            return False
        fields = {"provider": provider, "region": region}
        for expr in (self.field_selector.match_expressions or ()) if self.field_selector else ():
            if not _field_matches(expr, fields, zones):
                return False
        return not self.cluster_names or name in self.cluster_names


def _field_matches(expr: FieldSelectorRequirement, fields: Mapping[str, str], zones: Sequence[str]) -> bool:
    values = tuple(expr.values or ())
    if expr.key == "zone":
        hit = any(z in values for z in zones)
        if expr.operator == "In":
            return hit
        return not hit if expr.operator == "NotIn" else False
    if expr.operator not in ("In", "NotIn") or expr.key not in fields:
        return False
    present = {expr.key: fields[expr.key]} if fields[expr.key] else {}
    return Requirement(expr.key, expr.operator, values).matches(present)  # type: ignore[arg-type]


class OverflowClusterAffinity(ClusterAffinity):
    """An overflow tier of a ClusterAffinityTerm (Karmada v1.18+)."""

    affinity_name: StrictStr


class ClusterAffinityTerm(ClusterAffinity):
    """One named group of ``clusterAffinities``; the ClusterAffinity fields are inline."""

    affinity_name: StrictStr
    overflow_affinities: tuple[OverflowClusterAffinity, ...] | None = None


class SpreadConstraint(KubeModel):
    """How the selected clusters spread over a topology: between minGroups and maxGroups groups of it."""

    model_config = DOCUMENTED

    spread_by_field: Literal["cluster", "region", "zone", "provider", ""] | None = None
    """The cluster field that forms the groups (cluster, region, zone or provider); not with spreadByLabel."""
    spread_by_label: StrictStr | None = None
    """The cluster label whose values form the groups; not with spreadByField."""
    max_groups: Int64 | None = None
    """At most this many groups are selected."""
    min_groups: Int64 | None = None
    """At least this many groups must be selected, or scheduling fails (default 1)."""

    def effective_field(self) -> str:
        """The grouping field after Karmada's defaulting: ``cluster`` when neither field nor label is set."""
        if self.spread_by_field:
            return self.spread_by_field
        return "" if self.spread_by_label else "cluster"

    def effective_min_groups(self) -> int:
        """``minGroups`` after defaulting (0 or unset → 1)."""
        return self.min_groups or 1


class StaticClusterWeight(KubeModel):
    target_cluster: ClusterAffinity
    weight: Int64


class ClusterPreferences(KubeModel):
    static_weight_list: tuple[StaticClusterWeight, ...] | None = None
    dynamic_weight: Literal["AvailableReplicas", ""] | None = None


class ReplicaSchedulingStrategy(KubeModel):
    """How the replicas of a workload are assigned to the selected clusters."""

    model_config = DOCUMENTED

    replica_scheduling_type: Literal["Duplicated", "Divided", ""] | None = None
    """Duplicated: every selected cluster runs all the replicas. Divided (the default when this strategy is
    given): the replicas are split among the selected clusters."""
    replica_division_preference: Literal["Aggregated", "Weighted", ""] | None = None
    """For Divided: Aggregated packs the replicas into as few clusters as fit them; Weighted (the default)
    splits them by weightPreference."""
    weight_preference: ClusterPreferences | None = None
    """For Weighted: static weights per cluster, or dynamic weights by available replicas."""


class Placement(KubeModel):
    """Where a workload may go and how its replicas are split."""

    model_config = DOCUMENTED

    cluster_affinity: ClusterAffinity | None = None
    """The clusters the workload may be scheduled to; not together with clusterAffinities."""
    cluster_affinities: tuple[ClusterAffinityTerm, ...] | None = None
    """Named groups of clusters, tried in order: the first group the workload fits in is used, so a later
    group is a fallback for an earlier one. Not together with clusterAffinity."""
    cluster_tolerations: tuple[Toleration, ...] | None = None
    """Taints of clusters this workload tolerates (NoSchedule to be placed there, NoExecute to stay)."""
    spread_constraints: tuple[SpreadConstraint, ...] | None = None
    """How the selected clusters spread over clusters, regions, zones or providers."""
    replica_scheduling: ReplicaSchedulingStrategy | None = None
    """How the replicas of a workload with spec.replicas are assigned to the selected clusters; without it
    every selected cluster gets all of them (Duplicated)."""

    def replica_scheduling_type(self) -> Literal["Duplicated", "Divided"]:
        """Karmada ``Placement.ReplicaSchedulingType()`` plus the CRD default (empty type → Divided)."""
        if self.replica_scheduling is None:
            return "Duplicated"
        return self.replica_scheduling.replica_scheduling_type or "Divided"

    def division_preference(self) -> Literal["Aggregated", "Weighted"] | None:
        """For Divided: the preference, empty → Weighted (mutating webhook). None for Duplicated."""
        if self.replica_scheduling_type() != "Divided":
            return None
        assert self.replica_scheduling is not None
        return self.replica_scheduling.replica_division_preference or "Weighted"

    def strategy(self) -> Strategy:
        """The assign function Karmada's ``assignFuncMap`` would pick."""
        preference = self.division_preference()
        if preference is None:
            return "Duplicated"
        if preference == "Aggregated":
            return "Aggregated"
        assert self.replica_scheduling is not None
        weights = self.replica_scheduling.weight_preference
        if weights is not None and weights.dynamic_weight:
            return "DynamicWeight"
        return "StaticWeight"

    def static_weights(self) -> tuple[StaticClusterWeight, ...] | None:
        """The static weight rules, or None when every candidate gets weight 1 (no weightPreference)."""
        if self.replica_scheduling is None or self.replica_scheduling.weight_preference is None:
            return None
        return self.replica_scheduling.weight_preference.static_weight_list or ()

    def affinity_terms(self) -> tuple[ClusterAffinityTerm, ...]:
        """``clusterAffinities``, or the single ``clusterAffinity`` as one unnamed term, or no terms."""
        if self.cluster_affinities:
            return self.cluster_affinities
        if self.cluster_affinity is not None:
            data = self.cluster_affinity.model_dump(by_alias=True, exclude_unset=True)
            return (ClusterAffinityTerm.model_validate({**data, "affinityName": ""}),)
        return ()

    def tolerations(self) -> tuple[Toleration, ...]:
        return self.cluster_tolerations or ()

    def spreads(self) -> tuple[SpreadConstraint, ...]:
        return self.spread_constraints or ()
