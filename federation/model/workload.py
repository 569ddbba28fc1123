"""Karmada's default resource interpreter, for the built-in workload kinds: how many replicas a template
asks for, what one replica requests, and the template with a cluster's share of the replicas.

Follows `pkg/resourceinterpreter/default/native/` (GetReplicas / ReviseReplica):
- Deployment, StatefulSet, ReplicaSet: `spec.replicas` (absent or null → 1, as the Kubernetes default).
- Job: `spec.parallelism` (absent or null → 1); a Pod is 1 replica.
- Per-replica request: the pod template's containers summed, raised to any single init container's
  request where that is larger (the Kubernetes effective request); a null quantity counts as zero.
Anything else is not a workload (a CRD's kind included): 0 replicas, no requirements, and none of its
fields are read (it is propagated whole to every cluster).

Invariants:
- A template that passed admission (``rules_builtin``) is always read without error.
- A template that did not (stored before admission was as strict) raises ``InvalidTemplate`` naming the field,
  never a TypeError or AttributeError, so a controller can set that one object aside and say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from federation.model.base import INT32_MAX
from federation.model.jsonvalue import clone
from federation.model.quantity import DECIMAL_SI, canonical_quantity, parse_quantity, quantity_format

REPLICA_KINDS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")})
JOB = ("batch", "Job")
POD = ("", "Pod")


class InvalidTemplate(ValueError):
    """A workload template a field of which the interpreter cannot read; the message names the field."""


def _group_kind(template: Mapping[str, Any]) -> tuple[str, str]:
    group = str(template.get("apiVersion", "")).rpartition("/")[0]
    return group, str(template.get("kind", ""))


def is_workload(template: Mapping[str, Any]) -> bool:
    key = _group_kind(template)
    return key in REPLICA_KINDS or key in (JOB, POD)


def replicas_of(template: Mapping[str, Any]) -> int:
    key = _group_kind(template)
    if key in REPLICA_KINDS:
        return _count(_object(template, "spec", ""), "replicas")
    if key == JOB:
        return _count(_object(template, "spec", ""), "parallelism")
    return 1 if key == POD else 0


def _count(spec: Mapping[str, Any], field: str) -> int:
    value = spec.get(field)
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        raise InvalidTemplate(
            f"spec.{field}: {value!r} is not a replica count (an integer in [0, {INT32_MAX}])"
        )
    return value


def _object(parent: Mapping[str, Any], field: str, path: str) -> Mapping[str, Any]:
    value = parent.get(field)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidTemplate(f"{_join(path, field)}: must be an object, not {type(value).__name__}")
    return value


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def pod_spec_of(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if _group_kind(template) == POD:
        return _object(template, "spec", "")
    if not is_workload(template):
        return None
    pod_template = _object(_object(template, "spec", ""), "template", "spec")
    return _object(pod_template, "spec", "spec.template")


def resource_request_of(template: Mapping[str, Any]) -> dict[str, str]:
    """One replica's requests as quantity strings (empty when the template requests nothing)."""
    pod = pod_spec_of(template)
    if pod is None:
        return {}
    path = "spec" if _group_kind(template) == POD else "spec.template.spec"
    total = _sum_requests(_containers(pod, "containers", path))
    for where, init in _containers(pod, "initContainers", path):
        for name, amount in _requests(init, where).items():
            if name not in total or amount[0] > total[name][0]:
                total[name] = amount
    # Printed as Kubernetes prints the sum (128Mi stays 128Mi): in the format of its first term.
    return {name: canonical_quantity(value, fmt) for name, (value, fmt) in sorted(total.items()) if value > 0}


def _containers(pod: Mapping[str, Any], field: str, path: str) -> list[tuple[str, Mapping[str, Any]]]:
    value = pod.get(field)
    here = _join(path, field)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(c, Mapping) for c in value):
        raise InvalidTemplate(f"{here}: must be a list of objects")
    return [(f"{here}[{i}]", c) for i, c in enumerate(value)]


# A request's value and the Kubernetes format it prints in (``quantity_format``).
Amount = tuple[Decimal, str]


def _sum_requests(containers: list[tuple[str, Mapping[str, Any]]]) -> dict[str, Amount]:
    total: dict[str, Amount] = {}
    for where, container in containers:
        for name, (value, fmt) in _requests(container, where).items():
            previous = total.get(name)
            total[name] = (value, fmt) if previous is None else (previous[0] + value, previous[1])
    return total


def _requests(container: Mapping[str, Any], path: str) -> dict[str, Amount]:
    resources = _object(container, "resources", path)
    here = _join(path, "resources")
    # Kubernetes defaults requests to limits when only limits are given.
    limits, requests = _object(resources, "limits", here), _object(resources, "requests", here)
    merged = {
        **{name: (value, f"{here}.limits[{name}]") for name, value in limits.items()},
        **{name: (value, f"{here}.requests[{name}]") for name, value in requests.items()},
    }
    return {str(name): _quantity(value, where) for name, (value, where) in merged.items()}


def _quantity(value: Any, path: str) -> Amount:
    if value is None:  # JSON null decodes to a zero Quantity
        return Decimal(0), DECIMAL_SI
    try:
        return parse_quantity(value), quantity_format(value)
    except ValueError as exc:
        raise InvalidTemplate(f"{path}: {exc}") from exc


def with_replicas(template: Mapping[str, Any], replicas: int) -> dict[str, Any]:
    """A deep copy of the template with its replica count set (ReviseReplica); others unchanged."""
    revised = clone(dict(template))
    key = _group_kind(template)
    field = "replicas" if key in REPLICA_KINDS else "parallelism" if key == JOB else None
    if field is None:
        return revised
    spec = revised.get("spec")
    if spec is None:
        spec = revised["spec"] = {}
    if not isinstance(spec, dict):
        raise InvalidTemplate(f"spec: must be an object, not {type(spec).__name__}")
    spec[field] = replicas
    return revised
