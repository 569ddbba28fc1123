"""Validate and parse API manifests: metadata rules, model shape, Karmada's webhook rules and kube-apiserver's
rules for built-in kinds, all at once.

Entry points: ``validate_object`` (every problem as a ``FieldError``), ``parse_object`` (typed object or
``ValidationFailed``), ``validate_update`` (immutable fields), ``pydantic_errors`` (pydantic → field paths,
from ``shape``).

Invariants:
- Every bad field is reported, not just the first: metadata checks, the pydantic shape pass and the webhook
  rules (``rules``/``rules_objects``) all run on the raw manifest, independently of each other's outcome.
- Field paths use JSON (alias) names with ``[i]`` indices and ``[key]`` map keys, e.g.
  ``spec.placement.clusterTolerations[1].operator``; errors are de-duplicated and kept in discovery order.
- Karmada/Kosmos kinds: integers are range-checked as the CRD's Go type (int32, int64, uint), so nothing
  stored overflows a field a controller or a member reads.
- Registered built-in kinds (``kinds.is_builtin_kind``: Deployment, Job, Pod, ConfigMap, Service, ...) get
  kube-apiserver's name rule for their kind and its spec rules (``rules_builtin``): what kube-apiserver would
  refuse, this refuses, with the same field path. Any other resource template (a CRD's kind, an unregistered
  version) gets metadata checks only: the member cluster's API server owns its schema.
- Validation never raises on a bad value; whatever it passes, the workload interpreter can read.
- No I/O, no clock: the same manifest always gives the same errors.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from federation.model import rules, rules_builtin, rules_objects, taintpolicy
from federation.model.binding import ClusterResourceBinding, ResourceBinding
from federation.model.cluster import Cluster
from federation.model.kinds import KindInfo, by_gvk, is_builtin_kind, is_federation_kind
from federation.model.labels import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, validate_labels
from federation.model.meta import (
    FieldError,
    ValidationFailed,
    invalid,
    join_path,
    key_path,
    not_supported,
    required,
)
from federation.model.policy import ClusterPropagationPolicy, PropagationPolicy
from federation.model.rebalancer import WorkloadRebalancer
from federation.model.shape import loc_to_path, pydantic_errors
from federation.model.taintpolicy import ClusterTaintPolicy
from federation.model.work import Work
from federation.model.workloadpolicy import WorkloadPolicy

ApiModel = (
    PropagationPolicy
    | ClusterPropagationPolicy
    | ResourceBinding
    | ClusterResourceBinding
    | Work
    | Cluster
    | WorkloadRebalancer
    | WorkloadPolicy
    | ClusterTaintPolicy
)
SpecRule = Callable[[Mapping[str, Any], str], list[FieldError]]

MODELS: dict[str, type[BaseModel]] = {
    "PropagationPolicy": PropagationPolicy,
    "ClusterPropagationPolicy": ClusterPropagationPolicy,
    "ResourceBinding": ResourceBinding,
    "ClusterResourceBinding": ClusterResourceBinding,
    "Work": Work,
    "Cluster": Cluster,
    "WorkloadRebalancer": WorkloadRebalancer,
    "WorkloadPolicy": WorkloadPolicy,
    "ClusterTaintPolicy": ClusterTaintPolicy,
}
SPEC_RULES: dict[str, SpecRule] = {
    "PropagationPolicy": rules.propagation_spec,
    "ClusterPropagationPolicy": rules.propagation_spec,
    "ResourceBinding": rules_objects.binding_spec,
    "ClusterResourceBinding": rules_objects.binding_spec,
    "Work": rules_objects.work_spec,
    "Cluster": rules_objects.cluster_spec,
    "WorkloadRebalancer": rules_objects.rebalancer_spec,
    "WorkloadPolicy": rules_objects.workload_policy_spec,
    "ClusterTaintPolicy": taintpolicy.spec_rules,
}
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

__all__ = [
    "MODELS",
    "ApiModel",
    "loc_to_path",
    "parse_object",
    "pydantic_errors",
    "validate_metadata",
    "validate_object",
    "validate_update",
]


# ---------------------------------------------------------------------------------------------------------
# entry points


def validate_object(manifest: Any, info: KindInfo | None = None) -> list[FieldError]:
    """Every problem with ``manifest`` (empty when valid); ``info`` defaults to the registry entry."""
    if not isinstance(manifest, Mapping):
        return [invalid("", type(manifest).__name__, "an API object must be a JSON/YAML object")]
    errors = _type_meta(manifest, info)
    info = info or by_gvk(str(manifest.get("apiVersion")), str(manifest.get("kind")))
    errors += validate_metadata(manifest.get("metadata"), info)
    if info is not None and is_federation_kind(info) and info.kind in MODELS:
        errors += pydantic_errors(MODELS[info.kind], manifest, skip=("apiVersion", "kind", "metadata"))
        spec = manifest.get("spec")
        if isinstance(spec, Mapping):
            errors += SPEC_RULES[info.kind](spec, "spec")
    elif info is not None and is_builtin_kind(info):
        errors += rules_builtin.validate_builtin(manifest, info)
    return _dedupe(errors)


def parse_object(manifest: Any, info: KindInfo | None = None) -> ApiModel | dict[str, Any]:
    """Typed object for Karmada/Kosmos kinds, the manifest for templates; raises ValidationFailed."""
    errors = validate_object(manifest, info)
    meta = manifest.get("metadata") if isinstance(manifest, Mapping) else None
    name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
    kind = str(manifest.get("kind", "")) if isinstance(manifest, Mapping) else ""
    if errors:
        raise ValidationFailed(errors, kind=kind, name=name)
    info = info or by_gvk(str(manifest.get("apiVersion")), kind)
    if info is not None and info.kind in MODELS and is_federation_kind(info):
        return typing.cast(ApiModel, MODELS[info.kind].model_validate(manifest))
    return dict(manifest)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """Fields that may not change on update: name, namespace, kind. A WorkloadRebalancer's spec may change
    (Karmada's modification rules, ``model/rebalancing``)."""
    errors: list[FieldError] = []
    old_meta, new_meta = rules.obj(old.get("metadata")), rules.obj(new.get("metadata"))
    for key in ("name", "namespace"):
        if old_meta.get(key) != new_meta.get(key):
            errors.append(invalid(join_path("metadata", key), new_meta.get(key), "field is immutable"))
    if old.get("kind") != new.get("kind"):
        errors.append(invalid("kind", new.get("kind"), "field is immutable"))
    return errors


# ---------------------------------------------------------------------------------------------------------
# type meta and object meta


def _type_meta(manifest: Mapping[str, Any], info: KindInfo | None) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("apiVersion", "kind"):
        value = manifest.get(key)
        if not isinstance(value, str) or not value:
            errors.append(required(key) if not value else invalid(key, value, "must be a string"))
    if info is not None and manifest.get("kind") and manifest.get("kind") != info.kind:
        errors.append(not_supported("kind", manifest.get("kind"), (info.kind,)))
    if info is not None and manifest.get("apiVersion") and manifest.get("apiVersion") != info.api_version:
        errors.append(not_supported("apiVersion", manifest.get("apiVersion"), (info.api_version,)))
    return errors


def validate_metadata(metadata: Any, info: KindInfo | None) -> list[FieldError]:
    """Name (required; DNS-1123 subdomain, a label for Namespaces, Karmada's rule for Clusters), namespace,
    labels and annotations, like ``ValidateObjectMeta``."""
    if metadata is None:
        return [required("metadata.name", "name or generateName is required")]
    if not isinstance(metadata, Mapping):
        return [invalid("metadata", type(metadata).__name__, "must be an object")]
    errors = _name(metadata, info)
    errors += _namespace(metadata, info)
    labels = metadata.get("labels")
    if labels is not None:
        if isinstance(labels, Mapping):
            errors += validate_labels(labels, "metadata.labels")
        else:
            errors.append(
                invalid("metadata.labels", type(labels).__name__, "must be a map of string to string")
            )
    errors += _annotations(metadata.get("annotations"))
    return errors


def _name(metadata: Mapping[str, Any], info: KindInfo | None) -> list[FieldError]:
    name = metadata.get("name")
    if name is None or name == "":
        generate = metadata.get("generateName")
        return (
            []
            if isinstance(generate, str) and generate
            else [required("metadata.name", "name or generateName is required")]
        )
    if not isinstance(name, str):
        return [invalid("metadata.name", name, "must be a string")]
    return [invalid("metadata.name", name, m) for m in _name_rule(info)(name)]


def _name_rule(info: KindInfo | None) -> Callable[[str], list[str]]:
    if info is not None and info.kind == "Cluster" and info.group == "cluster.karmada.io":
        return rules_objects.cluster_name
    builtin = rules_builtin.name_rule(info) if info is not None and is_builtin_kind(info) else None
    return builtin or is_dns1123_subdomain


def _namespace(metadata: Mapping[str, Any], info: KindInfo | None) -> list[FieldError]:
    namespace = metadata.get("namespace")
    if info is not None and info.namespaced and not namespace:
        return [required("metadata.namespace", f"{info.kind} is namespaced")]
    if namespace is None or namespace == "":
        return []
    if not isinstance(namespace, str):
        return [invalid("metadata.namespace", namespace, "must be a string")]
    return [invalid("metadata.namespace", namespace, m) for m in is_dns1123_label(namespace)]


def _annotations(annotations: Any) -> list[FieldError]:
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [
            invalid("metadata.annotations", type(annotations).__name__, "must be a map of string to string")
        ]
    errors: list[FieldError] = []
    size = 0
    for key, value in annotations.items():
        errors += [invalid("metadata.annotations", key, m) for m in is_qualified_name(str(key))]
        if not isinstance(value, str):
            errors.append(invalid(key_path("metadata.annotations", str(key)), value, "must be a string"))
            continue
        size += len(str(key)) + len(value)
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(
            invalid("metadata.annotations", f"{size} bytes", "may not be more than 256 KiB in total")
        )
    return errors


# ---------------------------------------------------------------------------------------------------------
# helpers


def _dedupe(errors: list[FieldError]) -> list[FieldError]:
    seen: set[tuple[str, str]] = set()
    unique: list[FieldError] = []
    for error in errors:
        if (error.field, error.message) not in seen:
            seen.add((error.field, error.message))
            unique.append(error)
    return unique
