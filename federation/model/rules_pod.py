"""kube-apiserver's rules for a pod spec, in a Pod or in a workload's pod template: the fields the workload
interpreter reads (containers, their resource requests and limits) and the ones a member would refuse.

Sources: kubernetes ``pkg/apis/core/validation/validation.go`` (ValidatePodTemplateSpec, ValidatePodSpec,
validateContainerCommon, ValidateResourceRequirements, validateContainerResourceName,
ValidateResourceQuantityValue), ``pkg/apis/core/v1/helper`` (IsExtendedResourceName, IsOvercommitAllowed).

Invariants:
- Every problem is reported, each at the offending field; a value of the wrong JSON type is one error and its
  contents are not inspected further (``containers: "abc"`` is one error, not one per character).
- After these rules pass, the workload interpreter can read every container's ``resources.requests`` and
  ``limits`` as maps of valid quantities, and ``containers`` as a non-empty list of objects.
- A request above its limit is reported at ``resources.requests[<name>]`` (kube-apiserver points at
  ``resources.requests``), with kube-apiserver's message ``must be less than or equal to cpu limit of 1``.
- ``restartPolicy`` is checked after Kubernetes' defaulting: absent means ``Always``, which a Job refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from federation.model.labels import is_dns1123_label, is_qualified_name, validate_labels
from federation.model.meta import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    join_path,
    key_path,
    not_supported,
    required,
)
from federation.model.quantity import QuantityRangeError, parse_quantity
from federation.model.rules_fields import (
    int_field,
    is_int,
    list_field,
    object_field,
    objects,
    string_field,
    string_map,
    type_error,
)

STANDARD_CONTAINER_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
MAX_ACTIVE_DEADLINE_SECONDS: Final = 2**32 - 1
QUANTITY_FORMAT: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def pod_template(
    parent: Mapping[str, Any], path: str, restart: tuple[str, ...], *, controller: bool = True
) -> tuple[Mapping[str, str] | None, list[FieldError]]:
    """``<path>.template`` (a PodTemplateSpec): its labels (None when they are not a map) and every error.

    ``restart`` lists the restartPolicy values the owning kind allows; ``controller`` forbids
    ``activeDeadlineSeconds``, which a Deployment, ReplicaSet, StatefulSet or DaemonSet cannot have.
    """
    here = join_path(path, "template")
    template, errors = object_field(parent, "template", path)
    if errors:
        return None, errors
    meta, errors = object_field(template, "metadata", here)
    labels_path = join_path(here, "metadata", "labels")
    raw_labels = meta.get("labels")
    labels: Mapping[str, str] | None = None
    if raw_labels is None or isinstance(raw_labels, Mapping):
        errors += validate_labels(raw_labels or {}, labels_path)
        if all(isinstance(v, str) for v in (raw_labels or {}).values()):
            labels = {str(k): v for k, v in (raw_labels or {}).items()}
    else:
        errors.append(type_error(labels_path, raw_labels, "object"))
    errors += pod_spec(template.get("spec"), join_path(here, "spec"), restart, controller=controller)
    return labels, errors


def pod_spec(raw: Any, path: str, restart: tuple[str, ...], *, controller: bool = False) -> list[FieldError]:
    """``raw`` as a PodSpec at ``path`` (absent/null is an empty spec: no containers)."""
    if raw is not None and not isinstance(raw, Mapping):
        return [type_error(path, raw, "object")]
    spec: Mapping[str, Any] = raw or {}
    names: set[str] = set()
    errors = _containers(spec, path, "containers", names, required_list=True)
    errors += _containers(spec, path, "initContainers", names, required_list=False)
    errors += _restart_policy(spec, path, restart)
    errors += _active_deadline(spec, path, controller)
    errors += int_field(spec, "terminationGracePeriodSeconds", path, minimum=None, bits=64)
    selector, selector_errors = string_map(spec, "nodeSelector", path)
    errors += selector_errors + validate_labels(selector, join_path(path, "nodeSelector"))
    return errors


def _restart_policy(spec: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> list[FieldError]:
    policy, errors = string_field(spec, "restartPolicy", path)
    here = join_path(path, "restartPolicy")
    if errors or (policy or "Always") in allowed:
        return errors
    if not policy:  # defaulted to Always, which this kind refuses: say what it needs
        return [required(here, "valid values: " + ", ".join(f'"{v}"' for v in allowed))]
    return [not_supported(here, policy, allowed)]


def _active_deadline(spec: Mapping[str, Any], path: str, controller: bool) -> list[FieldError]:
    value = spec.get("activeDeadlineSeconds")
    here = join_path(path, "activeDeadlineSeconds")
    if value is None:
        return []
    if controller:
        return [invalid(here, value, "must not be specified")]
    if not is_int(value):
        return [type_error(here, value, "integer")]
    if not 1 <= value <= MAX_ACTIVE_DEADLINE_SECONDS:
        return [invalid(here, value, f"must be between 1 and {MAX_ACTIVE_DEADLINE_SECONDS}, inclusive")]
    return []


# ---------------------------------------------------------------------------------------------------------
# containers


def _containers(
    spec: Mapping[str, Any], path: str, key: str, names: set[str], *, required_list: bool
) -> list[FieldError]:
    here = join_path(path, key)
    raw, errors = list_field(spec, key, path)
    if errors:
        return errors
    if required_list and not raw:
        return [required(here, "must have at least one container")]
    elements, errors = objects(raw, here)
    for i, container in elements:
        errors += _container(container, join_path(here, i), names)
    return errors


def _container(container: Mapping[str, Any], path: str, names: set[str]) -> list[FieldError]:
    name, errors = string_field(container, "name", path)
    name_path = join_path(path, "name")
    if not name and not errors:
        errors.append(required(name_path))
    elif name:
        errors += [invalid(name_path, name, m) for m in is_dns1123_label(name)]
        if name in names:
            errors.append(duplicate(name_path, name))
        names.add(name)
    image, image_errors = string_field(container, "image", path)
    errors += image_errors
    if not image and not image_errors:
        errors.append(required(join_path(path, "image")))
    resources, resource_errors = object_field(container, "resources", path)
    return errors + resource_errors + resource_requirements(resources, join_path(path, "resources"))


# ---------------------------------------------------------------------------------------------------------
# resources


def resource_requirements(resources: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateResourceRequirements``: names, quantities, requests within limits, extended resources.

    A request is compared only with a limit that is itself valid (a bad limit is reported once, on its own).
    """
    limits, errors = _quantities(resources, "limits", path)
    requests, request_errors = _quantities(resources, "requests", path)
    errors += request_errors
    given = _names(resources, "limits")
    for name, quantity in requests.items():
        if name in limits or name not in given:
            errors += _within_limit(name, quantity, limits, path)
    names = given | _names(resources, "requests")
    if any(n.startswith("hugepages-") for n in names) and not names & {"cpu", "memory"}:
        errors.append(forbidden(path, "HugePages require cpu or memory"))
    return errors


def _names(resources: Mapping[str, Any], key: str) -> set[str]:
    raw = resources.get(key)
    return {str(n) for n in raw} if isinstance(raw, Mapping) else set()


def _quantities(
    parent: Mapping[str, Any], key: str, path: str
) -> tuple[dict[str, Decimal], list[FieldError]]:
    """One of requests/limits: the valid entries as Decimals, and every error."""
    raw, errors = object_field(parent, key, path)
    here = join_path(path, key)
    good: dict[str, Decimal] = {}
    for name, value in raw.items():
        entry = key_path(here, str(name))
        name_errors = container_resource_name(str(name), entry)
        quantity, value_errors = quantity_value(value, entry)
        errors += name_errors + value_errors
        if quantity is None or value_errors:
            continue
        if quantity < 0:
            errors.append(invalid(entry, value, "must be greater than or equal to 0"))
        elif is_extended_resource(str(name)) and quantity != quantity.to_integral_value():
            errors.append(invalid(entry, value, "must be an integer"))
        elif not name_errors:
            good[str(name)] = quantity
    return good, errors


def quantity_value(value: Any, path: str) -> tuple[Decimal | None, list[FieldError]]:
    """A Quantity as JSON carries it: a string or a number (null decodes as zero)."""
    if value is None:
        return Decimal(0), []
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None, [type_error(path, value, "string")]
    try:
        return parse_quantity(value), []
    except QuantityRangeError as exc:
        return None, [invalid(path, value, exc.detail)]
    except ValueError:
        return None, [invalid(path, value, QUANTITY_FORMAT)]


def _within_limit(name: str, request: Decimal, limits: Mapping[str, Decimal], path: str) -> list[FieldError]:
    here = key_path(join_path(path, "requests"), name)
    limit = limits.get(name)
    if limit is None:
        if is_overcommit_allowed(name):
            return []
        return [required(join_path(path, "limits"), "Limit must be set for non overcommitable resources")]
    if request != limit and not is_overcommit_allowed(name):
        return [invalid(here, _plain(request), f"must be equal to {name} limit of {_plain(limit)}")]
    if request > limit:
        return [
            invalid(here, _plain(request), f"must be less than or equal to {name} limit of {_plain(limit)}")
        ]
    return []


def _plain(quantity: Decimal) -> str:
    return format(quantity.normalize(), "f")


def container_resource_name(name: str, path: str) -> list[FieldError]:
    """``validateContainerResourceName``: a qualified name; standard when unprefixed, else native or
    extended."""
    errors = [invalid(path, name, m) for m in is_qualified_name(name)]
    if "/" not in name:
        if not is_standard_container_resource(name):
            errors.append(invalid(path, name, "must be a standard resource for containers"))
    elif not is_native_resource(name) and not is_extended_resource(name):
        errors.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errors


def is_standard_container_resource(name: str) -> bool:
    return name in STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-")


def is_native_resource(name: str) -> bool:
    """Unprefixed, or in the ``kubernetes.io`` domain."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside kubernetes.io, usable in a quota."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    """Native resources other than hugepages may request less than their limit; the rest must match it."""
    return is_native_resource(name) and not name.startswith("hugepages-")
