"""Admission rules for Cluster, WorkloadRebalancer, Kosmos WorkloadPolicy, bindings and Works.

Sources: karmada-io/karmada ``pkg/util/validation/validation.go`` (ValidateClusterName, ValidateClusterSpec,
ValidateClusterAPIEndpoint, ValidateClusterProxyURL, ValidateClusterResourceModels), ``pkg/util/lifted``
(ValidateClusterTaints), the WorkloadRebalancer and binding CRD schemas, Kosmos' WorkloadPolicy CRD.

Invariants: the same as ``federation.model.rules`` — raw-dict rules that skip ill-typed values (the pydantic
pass reports those) and report every problem, each at the offending field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from federation.model.labels import is_dns1123_label, is_qualified_name, is_valid_label_value
from federation.model.meta import FieldError, duplicate, invalid, join_path, not_supported, required
from federation.model.quantity import parse_quantity
from federation.model.rules import integer, items, label_selector, obj, text

CLUSTER_NAME_MAX_LENGTH = 48
RESOURCE_MODEL_NAMES = ("cpu", "ephemeral-storage", "memory", "storage")
MAX_INT64 = 2**63 - 1


def cluster_name(name: str) -> list[str]:
    """Karmada ``ValidateClusterName``: a DNS-1123 label, at most 48 characters (room for ``karmada-es-``)."""
    if len(name) > CLUSTER_NAME_MAX_LENGTH:
        return [f"must be no more than {CLUSTER_NAME_MAX_LENGTH} characters"]
    return is_dns1123_label(name)


def cluster_spec(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    errors: list[FieldError] = []
    if spec.get("syncMode") == "":
        errors.append(required(join_path(path, "syncMode")))
    endpoint = spec.get("apiEndpoint")
    if isinstance(endpoint, str) and endpoint:
        errors += api_endpoint(endpoint, join_path(path, "apiEndpoint"))
    for ref in ("secretRef", "impersonatorSecretRef"):
        raw = spec.get(ref)
        if isinstance(raw, Mapping):
            errors += [required(join_path(path, ref, k)) for k in ("namespace", "name") if not raw.get(k)]
    proxy = spec.get("proxyURL")
    if isinstance(proxy, str) and proxy and urlsplit(proxy).scheme not in ("http", "https", "socks5"):
        errors.append(
            invalid(
                join_path(path, "proxyURL"),
                proxy,
                f"unsupported scheme {urlsplit(proxy).scheme!r}, must be http, https, or socks5",
            )
        )
    errors += taints(spec.get("taints"), join_path(path, "taints"))
    errors += resource_models(spec.get("resourceModels"), join_path(path, "resourceModels"))
    return errors


def api_endpoint(endpoint: str, path: str) -> list[FieldError]:
    form = "; desired format: hostname, hostname:port, IP or IP:port"
    try:
        url = urlsplit(endpoint)
    except ValueError as exc:
        return [invalid(path, endpoint, f"apiEndpoint must be a valid URL: {exc}{form}")]
    errors: list[FieldError] = []
    if not url.netloc or not url.hostname:
        errors.append(invalid(path, endpoint, f"host must be provided{form}"))
    if url.username is not None:
        errors.append(invalid(path, endpoint, "user information is not permitted in the URL"))
    if url.fragment:
        errors.append(invalid(path, endpoint, "fragments are not permitted in the URL"))
    if url.query:
        errors.append(invalid(path, endpoint, "query parameters are not permitted in the URL"))
    return errors


def taints(raw: Any, path: str) -> list[FieldError]:
    """Karmada's lifted ``ValidateClusterTaints``: key/value syntax, effect required, unique key+effect."""
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in items(raw):
        here = join_path(path, i)
        key, value, effect = text(taint.get("key")), taint.get("value"), taint.get("effect")
        errors += [invalid(join_path(here, "key"), key, m) for m in is_qualified_name(key)] if key else []
        if "key" in taint and not key:
            errors.append(required(join_path(here, "key")))
        if isinstance(value, str):
            errors += [invalid(join_path(here, "value"), value, m) for m in is_valid_label_value(value)]
        if effect == "":
            errors.append(required(join_path(here, "effect")))
        if isinstance(effect, str) and effect and (key, effect) in seen:
            errors.append(
                FieldError(
                    here,
                    duplicate(here, f"{key}:{effect}").message
                    + ": taints must be unique by key and effect pair",
                    "FieldValueDuplicate",
                )
            )
        seen.add((key, text(effect)))
    return errors


def resource_models(raw: Any, path: str) -> list[FieldError]:
    """Karmada ``ValidateClusterResourceModels`` (all problems, not only the first)."""
    models = list(items(raw))
    errors: list[FieldError] = []
    for position, (i, model) in enumerate(models):
        grade = integer(model.get("grade"))
        if position and grade is not None and grade == integer(models[position - 1][1].get("grade")):
            errors.append(
                invalid(join_path(path, i, "grade"), grade, "The grade of each models should not be the same")
            )
        ranges = [r for _, r in items(model.get("ranges"))]
        previous = [r for _, r in items(models[position - 1][1].get("ranges"))] if position else []
        errors += _resource_model(ranges, previous, join_path(path, i), position, len(models))
    return errors


def _resource_model(
    ranges: list[Mapping[str, Any]],
    previous: list[Mapping[str, Any]],
    path: str,
    position: int,
    count: int,
) -> list[FieldError]:
    errors: list[FieldError] = []
    if position and len(previous) != len(ranges):
        errors.append(
            invalid(join_path(path, "ranges"), len(ranges), "The number of resource types should be the same")
        )
    for j, rng in enumerate(ranges):
        prior = previous[j] if j < len(previous) else None
        first, last = position == 0, position == count - 1
        errors += _model_range(rng, prior, join_path(path, "ranges", j), first, last)
    return errors


def _model_range(
    rng: Mapping[str, Any], prior: Mapping[str, Any] | None, path: str, first: bool, last: bool
) -> list[FieldError]:
    """One ``[min, max)`` range: known name, max > min, contiguous with the previous grade, bounded ends."""
    errors: list[FieldError] = []
    name = text(rng.get("name"))
    if name not in RESOURCE_MODEL_NAMES:
        errors.append(not_supported(join_path(path, "name"), name, RESOURCE_MODEL_NAMES))
    low, high = _quantity(rng.get("min")), _quantity(rng.get("max"))
    if low is None or high is None:
        return errors  # the pydantic pass reports unparseable quantities
    min_path, max_path = join_path(path, "min"), join_path(path, "max")
    if high <= low:
        errors.append(
            invalid(
                max_path, rng.get("max"), "The max value of each resource must be greater than the min value"
            )
        )
    if first and low != 0:
        errors.append(
            invalid(min_path, rng.get("min"), "The min value of each resource in the first model should be 0")
        )
    if prior is not None and text(prior.get("name")) != name:
        errors.append(
            invalid(join_path(path, "name"), name, "The resource types of each models should be the same")
        )
    elif prior is not None and _quantity(prior.get("max")) != low:
        errors.append(
            invalid(
                min_path,
                rng.get("min"),
                "Model intervals for resources must be contiguous and non-overlapping",
            )
        )
    if last and high < MAX_INT64:
        errors.append(
            invalid(
                max_path,
                rng.get("max"),
                "The max value of each resource in the last model should be MaxInt64",
            )
        )
    return errors


def _quantity(value: Any) -> Decimal | None:
    try:
        return parse_quantity(value)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------------------
# WorkloadRebalancer


def rebalancer_spec(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    errors: list[FieldError] = []
    workloads = spec.get("workloads")
    if isinstance(workloads, list) and not workloads:
        errors.append(required(join_path(path, "workloads"), "at least one workload is required"))
    seen: set[tuple[str, str, str, str]] = set()
    for i, ref in items(workloads):
        here = join_path(path, "workloads", i)
        errors += [required(join_path(here, k)) for k in ("apiVersion", "kind", "name") if ref.get(k) == ""]
        key = (
            text(ref.get("apiVersion")),
            text(ref.get("kind")),
            text(ref.get("namespace")),
            text(ref.get("name")),
        )
        if key in seen:
            errors.append(duplicate(here, "/".join(k for k in key if k)))
        seen.add(key)
    ttl = integer(spec.get("ttlSecondsAfterFinished"))
    if ttl is not None and ttl < 0:
        errors.append(
            invalid(join_path(path, "ttlSecondsAfterFinished"), ttl, "must be greater than or equal to 0")
        )
    return errors


# ---------------------------------------------------------------------------------------------------------
# Kosmos WorkloadPolicy


def workload_policy_spec(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    errors: list[FieldError] = []
    key = spec.get("topologyKey")
    if key == "":
        errors.append(required(join_path(path, "topologyKey")))
    elif isinstance(key, str):
        errors += [invalid(join_path(path, "topologyKey"), key, m) for m in is_qualified_name(key)]
    errors += label_selector(spec.get("labelSelector"), join_path(path, "labelSelector"))
    seen: set[str] = set()
    for i, entry in items(spec.get("allocationPolicy")):
        here = join_path(path, "allocationPolicy", i)
        name, replicas = entry.get("name"), integer(entry.get("replicas"))
        if isinstance(name, str):
            errors += [invalid(join_path(here, "name"), name, m) for m in is_valid_label_value(name)]
            if name in seen:
                errors.append(duplicate(join_path(here, "name"), name))
            seen.add(name)
        if replicas is not None and replicas < 0:
            errors.append(
                invalid(join_path(here, "replicas"), replicas, "must be greater than or equal to 0")
            )
    return errors


# ---------------------------------------------------------------------------------------------------------
# ResourceBinding / ClusterResourceBinding / Work

_EVICTION_REASON_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def binding_spec(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, target in items(spec.get("clusters")):
        here = join_path(path, "clusters", i)
        name, replicas = target.get("name"), integer(target.get("replicas"))
        if isinstance(name, str) and name in seen:
            errors.append(duplicate(join_path(here, "name"), name))
        seen.add(text(name))
        if replicas is not None and replicas < 0:
            errors.append(
                invalid(join_path(here, "replicas"), replicas, "must be greater than or equal to 0")
            )
    for i, task in items(spec.get("gracefulEvictionTasks")):
        errors += _eviction_task(task, join_path(path, "gracefulEvictionTasks", i))
    return errors


def _eviction_task(task: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    reason = task.get("reason")
    if isinstance(reason, str) and (len(reason) > 32 or not _EVICTION_REASON_RE.match(reason)):
        errors.append(invalid(join_path(path, "reason"), reason, "must be 1-32 characters of CamelCase"))
    message = task.get("message")
    if isinstance(message, str) and len(message) > 1024:
        errors.append(
            invalid(join_path(path, "message"), message[:40] + "...", "must be at most 1024 characters")
        )
    if task.get("gracePeriodSeconds") is not None and task.get("suppressDeletion") is not None:
        errors.append(
            invalid(
                join_path(path, "suppressDeletion"),
                task.get("suppressDeletion"),
                "gracePeriodSeconds and suppressDeletion cannot be set together",
            )
        )
    return errors


def work_spec(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    errors: list[FieldError] = []
    manifests = obj(spec.get("workload")).get("manifests")
    for i, manifest in enumerate(manifests if isinstance(manifests, list) else []):
        here = join_path(path, "workload", "manifests", i)
        if not isinstance(manifest, Mapping):
            errors.append(invalid(here, type(manifest).__name__, "each manifest must be an object"))
            continue
        errors += [required(join_path(here, k)) for k in ("apiVersion", "kind") if not manifest.get(k)]
    return errors
