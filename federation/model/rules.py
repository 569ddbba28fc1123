"""Karmada's (and our Kosmos) admission-webhook rules, checked on the raw manifest.

Sources: karmada-io/karmada ``pkg/util/validation/validation.go`` (ValidatePropagationSpec, ValidatePlacement,
ValidateSpreadConstraint, ValidateApplicationFailover, ValidateOverflowAffinities, ValidateClusterSpec,
ValidateClusterResourceModels), ``pkg/util/lifted`` (ValidateClusterTaints), Kubernetes
``ValidateTolerations``, and the CRD schema constraints the pydantic models cannot express (``weight >= 1``,
affinityName length).

Invariants:
- Rules read the raw dict defensively: a value of the wrong type is skipped here (the pydantic pass reports
  it), so a manifest with several problems gets every one reported in one pass.
- Rules see the manifest *before* Karmada's mutating webhook would have defaulted it, so they apply the same
  defaults first: an unset spreadByField (and no spreadByLabel) counts as ``cluster``, minGroups 0 counts as
  1, an empty purgeMode counts as Gracefully, a missing gracePeriodSeconds is fine (it defaults to 600).
- Field paths point at the offending field itself (``spreadConstraints[0].maxGroups``) where Karmada points at
  the enclosing element (``spreadConstraints[0]``); messages keep Karmada's wording.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from federation.model.labels import (
    LabelSelector,
    is_qualified_name,
    is_valid_label_value,
    validate_label_selector,
)
from federation.model.meta import FieldError, duplicate, invalid, join_path, not_supported, required
from federation.model.placement import FIELD_SELECTOR_KEYS, SPREAD_FIELDS

_EMPTY: Mapping[str, Any] = {}


# ---------------------------------------------------------------------------------------------------------
# defensive accessors


def obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


def items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(index, element) for every dict element of a list; anything else yields nothing."""
    if isinstance(value, list | tuple):
        for i, element in enumerate(value):
            if isinstance(element, Mapping):
                yield i, element


def integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------------------------------------------------
# PropagationPolicy / ClusterPropagationPolicy


def propagation_spec(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    errors = resource_selectors(spec, path)
    errors += placement(obj(spec.get("placement")), join_path(path, "placement"))
    failover = obj(spec.get("failover"))
    if isinstance(failover.get("application"), Mapping) and spec.get("propagateDeps") is not True:
        errors.append(
            invalid(
                join_path(path, "propagateDeps"),
                spec.get("propagateDeps", False),
                "application failover is set, propagateDeps must be true",
            )
        )
    errors += application_failover(
        obj(failover.get("application")), join_path(path, "failover", "application")
    )
    errors += suspension(obj(spec.get("suspension")), join_path(path, "suspension"))
    return errors


def resource_selectors(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    selectors = spec.get("resourceSelectors")
    sel_path = join_path(path, "resourceSelectors")
    errors: list[FieldError] = []
    if isinstance(selectors, list) and not selectors:
        errors.append(required(sel_path, "at least one resource selector is required"))
    preempt = spec.get("preemption") == "Always"
    for i, selector in items(selectors):
        here = join_path(sel_path, i)
        for key in ("apiVersion", "kind"):
            if selector.get(key) == "":
                errors.append(required(join_path(here, key)))
        if preempt and not selector.get("name"):
            errors.append(
                invalid(
                    join_path(here, "name"),
                    text(selector.get("name")),
                    "name cannot be empty if preemption is Always, the empty name may cause unexpected "
                    "resources preemption",
                )
            )
        errors += label_selector(selector.get("labelSelector"), join_path(here, "labelSelector"))
    return errors


def label_selector(raw: Any, path: str) -> list[FieldError]:
    """Kubernetes' label selector syntax rules, when the selector is well-typed."""
    if not isinstance(raw, Mapping):
        return []
    try:
        selector = LabelSelector.model_validate(raw)
    except ValueError:
        return []  # shape errors come from the pydantic pass
    return validate_label_selector(selector, path)


def suspension(raw: Mapping[str, Any], path: str) -> list[FieldError]:
    clusters = obj(raw.get("dispatchingOnClusters")).get("clusterNames")
    if raw.get("dispatching") is True and isinstance(clusters, list) and clusters:
        return [
            invalid(
                path,
                dict(raw),
                "suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames",
            )
        ]
    return []


def application_failover(raw: Mapping[str, Any], path: str) -> list[FieldError]:
    if not raw:
        return []
    errors: list[FieldError] = []
    toleration = integer(obj(raw.get("decisionConditions")).get("tolerationSeconds"))
    if toleration is not None and toleration < 0:
        errors.append(
            invalid(join_path(path, "decisionConditions", "tolerationSeconds"), toleration, "must be >= 0")
        )
    mode = raw.get("purgeMode") or "Gracefully"
    grace = integer(raw.get("gracePeriodSeconds"))
    grace_path = join_path(path, "gracePeriodSeconds")
    if grace is not None and mode not in ("Gracefully", "Graciously"):
        errors.append(invalid(grace_path, grace, "only takes effect when purgeMode is Gracefully"))
    elif grace is not None and grace <= 0:
        errors.append(invalid(grace_path, grace, "must be greater than 0"))
    return errors


# ---------------------------------------------------------------------------------------------------------
# Placement


def placement(raw: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if raw.get("clusterAffinity") is not None and raw.get("clusterAffinities") is not None:
        errors.append(
            invalid(path, "clusterAffinity", "clusterAffinities cannot co-exist with clusterAffinity")
        )
    errors += cluster_affinity(obj(raw.get("clusterAffinity")), join_path(path, "clusterAffinity"))
    errors += cluster_affinities(raw, join_path(path, "clusterAffinities"))
    errors += spread_constraints(raw.get("spreadConstraints"), join_path(path, "spreadConstraints"))
    errors += tolerations(raw.get("clusterTolerations"), join_path(path, "clusterTolerations"))
    errors += replica_scheduling(obj(raw.get("replicaScheduling")), join_path(path, "replicaScheduling"))
    return errors


def cluster_affinity(raw: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = label_selector(raw.get("labelSelector"), join_path(path, "labelSelector"))
    expr_path = join_path(path, "fieldSelector", "matchExpressions")
    for i, expr in items(obj(raw.get("fieldSelector")).get("matchExpressions")):
        key, op = expr.get("key"), expr.get("operator")
        if isinstance(key, str) and key not in FIELD_SELECTOR_KEYS:
            errors.append(not_supported(join_path(expr_path, i, "key"), key, FIELD_SELECTOR_KEYS))
        if isinstance(op, str) and op not in ("In", "NotIn"):
            errors.append(not_supported(join_path(expr_path, i, "operator"), op, ("In", "NotIn")))
    return errors


def cluster_affinities(placement_raw: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    overflow_ok = _overflow_allowed(obj(placement_raw.get("replicaScheduling")))
    for i, term in items(placement_raw.get("clusterAffinities")):
        here = join_path(path, i)
        errors += _affinity_name(term.get("affinityName"), join_path(here, "affinityName"), seen)
        errors += cluster_affinity(term, here)
        errors += overflow_affinities(term, here, overflow_ok)
    return errors


def _affinity_name(name: Any, path: str, seen: set[str]) -> list[FieldError]:
    if not isinstance(name, str):
        return []
    errors = [invalid(path, name, m) for m in is_qualified_name(name)] if name else [required(path)]
    if len(name) > 32:
        errors.append(invalid(path, name, "must be no more than 32 characters"))
    if name in seen:
        errors.append(duplicate(path, name))
    seen.add(name)
    return errors


def _overflow_allowed(replica_scheduling: Mapping[str, Any]) -> bool:
    """overflowAffinities need Divided + (Aggregated or dynamic weight)."""
    if not replica_scheduling or replica_scheduling.get("replicaSchedulingType") == "Duplicated":
        return False
    preference = replica_scheduling.get("replicaDivisionPreference") or "Weighted"
    dynamic = obj(replica_scheduling.get("weightPreference")).get("dynamicWeight")
    return preference == "Aggregated" or bool(dynamic)


def overflow_affinities(term: Mapping[str, Any], path: str, allowed: bool) -> list[FieldError]:
    overflow = term.get("overflowAffinities")
    if not isinstance(overflow, list) or not overflow:
        return []
    over_path = join_path(path, "overflowAffinities")
    errors: list[FieldError] = []
    if not allowed:
        errors.append(
            invalid(
                over_path,
                "overflowAffinities",
                "overflowAffinities can only be used together with dynamic weight or aggregated scheduling",
            )
        )
    if not any(term.get(k) for k in ("labelSelector", "fieldSelector", "clusterNames", "exclude")):
        errors.append(
            invalid(
                path,
                "clusterAffinity",
                "overflowAffinities can only be used together with the inline ClusterAffinity",
            )
        )
    names = {text(term.get("affinityName"))}
    for j, tier in items(overflow):
        name = tier.get("affinityName")
        name_path = join_path(over_path, j, "affinityName")
        if isinstance(name, str) and name in names:
            errors.append(
                FieldError(
                    name_path,
                    duplicate(name_path, name).message + ": overflow affinity name must be "
                    "unique and must not duplicate the primary group's affinityName",
                    "FieldValueDuplicate",
                )
            )
        names.add(text(name))
        errors += cluster_affinity(tier, join_path(over_path, j))
    return errors


def spread_constraints(raw: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    fields_seen: set[str] = set()
    for i, constraint in items(raw):
        here = join_path(path, i)
        errors += _one_spread_constraint(constraint, here)
        field = _spread_field(constraint)
        if field and field in fields_seen:
            errors.append(
                FieldError(
                    join_path(here, "spreadByField"),
                    duplicate("", field).message + f": multiple {field} spread constraints are not allowed",
                    "FieldValueDuplicate",
                )
            )
        if field:
            fields_seen.add(field)
    if fields_seen and "cluster" not in fields_seen:
        errors.append(
            invalid(
                path,
                sorted(fields_seen),
                "the cluster spread constraint must be enabled in one of the "
                "constraints in case of SpreadByField is enabled",
            )
        )
    return errors


def _spread_field(constraint: Mapping[str, Any]) -> str:
    """spreadByField after defaulting: unset (and no spreadByLabel) → cluster."""
    field = constraint.get("spreadByField")
    if isinstance(field, str) and field:
        return field if field in SPREAD_FIELDS else ""  # an unknown value is reported by the pydantic pass
    return "" if constraint.get("spreadByLabel") else "cluster"


def _one_spread_constraint(constraint: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if constraint.get("spreadByField") and constraint.get("spreadByLabel"):
        errors.append(
            invalid(
                join_path(path, "spreadByLabel"),
                constraint.get("spreadByLabel"),
                "spreadByLabel should not co-exist with spreadByField",
            )
        )
    label = constraint.get("spreadByLabel")
    if isinstance(label, str) and label:
        errors += [invalid(join_path(path, "spreadByLabel"), label, m) for m in is_qualified_name(label)]
    min_groups, max_groups = integer(constraint.get("minGroups")), integer(constraint.get("maxGroups"))
    if min_groups is not None and min_groups < 0:
        errors.append(
            invalid(join_path(path, "minGroups"), min_groups, "minGroups lower than 0 is not allowed")
        )
    if max_groups is not None and max_groups < 0:
        errors.append(
            invalid(join_path(path, "maxGroups"), max_groups, "maxGroups lower than 0 is not allowed")
        )
    effective_min = min_groups or 1
    if max_groups is not None and max_groups > 0 and max_groups < effective_min:
        errors.append(
            invalid(join_path(path, "maxGroups"), max_groups, "maxGroups lower than minGroups is not allowed")
        )
    return errors


def tolerations(raw: Any, path: str) -> list[FieldError]:
    """Kubernetes ``ValidateTolerations``."""
    errors: list[FieldError] = []
    for i, tol in items(raw):
        here = join_path(path, i)
        key, op, value = text(tol.get("key")), text(tol.get("operator")), tol.get("value")
        if key:
            errors += [invalid(join_path(here, "key"), key, m) for m in is_qualified_name(key)]
        elif op in ("", "Equal") and isinstance(tol.get("operator", ""), str):
            errors.append(
                invalid(
                    join_path(here, "operator"),
                    op,
                    "operator must be Exists when `key` is empty, which "
                    'means "match all values and all keys"',
                )
            )
        if tol.get("tolerationSeconds") is not None and tol.get("effect") != "NoExecute":
            errors.append(
                invalid(
                    join_path(here, "effect"),
                    text(tol.get("effect")),
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if op == "Exists" and isinstance(value, str) and value:
            errors.append(
                invalid(join_path(here, "value"), value, "value must be empty when `operator` is 'Exists'")
            )
        elif op in ("", "Equal") and isinstance(value, str):
            errors += [invalid(join_path(here, "value"), value, m) for m in is_valid_label_value(value)]
    return errors


def replica_scheduling(raw: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    weights_path = join_path(path, "weightPreference", "staticWeightList")
    for i, rule in items(obj(raw.get("weightPreference")).get("staticWeightList")):
        weight = integer(rule.get("weight"))
        if weight is not None and weight < 1:
            errors.append(
                invalid(join_path(weights_path, i, "weight"), weight, "must be greater than or equal to 1")
            )
        errors += cluster_affinity(
            obj(rule.get("targetCluster")), join_path(weights_path, i, "targetCluster")
        )
    return errors
