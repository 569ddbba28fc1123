"""Request validation and small object builders for the simulated API server.

Invariants:
- Validation never mutates its input: ``check_body`` returns a deep copy with apiVersion/kind/name defaulted.
- Errors are the ``ApiError``s a real API server returns for the same mistake (400 for a mismatched kind
  or name, 422 Invalid naming the field for bad names, selectors and replica counts).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from federation.model.jsonvalue import clone
from federation.model.labels import LabelSelector, is_path_segment_name
from federation.sim import errors
from federation.sim.kinds import Registry, ResourceType
from federation.sim.runtime import is_workload

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
RBAC_GROUP = "rbac.authorization.k8s.io"


def check_body(rtype: ResourceType, body: Any, name: str | None) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON or YAML object")
    obj = clone(body)
    obj.setdefault("apiVersion", rtype.group_version)
    obj.setdefault("kind", rtype.kind)
    if obj["kind"] != rtype.kind:
        raise errors.bad_request(f"the kind {obj['kind']!r} does not match the resource {rtype.plural!r}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    meta.setdefault("name", name or "")
    check_name(rtype, meta["name"], name)
    return obj


def check_name(rtype: ResourceType, given: Any, path_name: str | None) -> None:
    if not given:
        raise errors.invalid(rtype.kind, rtype.group, "", "metadata.name", "Required value: name is required")
    if path_name is not None and given != path_name:
        raise errors.bad_request("the name of the object does not match the name on the URL")
    if rtype.group == RBAC_GROUP and isinstance(given, str) and given and not is_path_segment_name(given):
        return  # RBAC names are path segments (kube-apiserver): `system:aggregate-to-view` is valid
    if not isinstance(given, str) or len(given) > 253 or not _NAME_RE.match(given):
        raise errors.invalid(
            rtype.kind,
            rtype.group,
            str(given),
            "metadata.name",
            "Invalid value: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, "
            "'-' or '.', and must start and end with an alphanumeric character",
        )


def check_workload(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """The apps/v1 rule users hit most: spec.selector is required and must match the template labels."""
    if not is_workload(rtype):
        return
    spec = obj.get("spec") or {}
    selector = spec.get("selector") or {}
    name = obj["metadata"]["name"]
    if not selector:
        raise errors.invalid(rtype.kind, rtype.group, name, "spec.selector", "Required value")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not _selects(rtype, name, selector, labels):
        raise errors.invalid(
            rtype.kind,
            rtype.group,
            name,
            "spec.template.metadata.labels",
            "Invalid value: `selector` does not match template `labels`",
        )
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 0:
        raise errors.invalid(
            rtype.kind, rtype.group, name, "spec.replicas", "must be greater than or equal to 0"
        )


def _selects(rtype: ResourceType, name: str, selector: Any, labels: dict[str, Any]) -> bool:
    try:
        return LabelSelector.model_validate(selector).matches(labels)
    except ValidationError as exc:
        problem = "; ".join(e["msg"] for e in exc.errors())
        raise errors.invalid(rtype.kind, rtype.group, name, "spec.selector", problem) from exc


def scale_of(workload: dict[str, Any]) -> dict[str, Any]:
    meta = workload["metadata"]
    selector = ((workload.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (workload.get("spec") or {}).get("replicas", 1)},
        "status": {
            "replicas": (workload.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
        },
    }


def register_crd(registry: Registry, crd: dict[str, Any]) -> None:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    if not (spec.get("group") and names.get("kind") and names.get("plural")):
        return
    for version in spec.get("versions") or []:
        if version.get("served", True) and version.get("name"):
            registry.register(
                ResourceType(
                    spec["group"],
                    version["name"],
                    names["kind"],
                    names["plural"],
                    spec.get("scope", "Namespaced") == "Namespaced",
                    tuple(names.get("shortNames") or ()),
                )
            )
