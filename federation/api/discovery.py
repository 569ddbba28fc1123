"""Discovery documents (`/api`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`), built from the kinds
served: the registry's and those applied CustomResourceDefinitions define (the caller reads them, `crds`).

Invariants:
- Discovery lists exactly what the object paths serve: a kind is listed at a group/version iff requests
  there resolve to it, with the same plural, scope, status and scale subresources.
- A group's versions are in Kubernetes' priority order (GA, then beta, then alpha; higher numbers first:
  `CompareKubeAwareVersionStrings`), and its preferred version is the first, as kube-apiserver lists them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from federation.model.kinds import KindInfo, has_scale

VERBS = ["create", "delete", "get", "list", "patch", "update"]
READ_VERBS = ["get", "list"]
_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STABILITY = {None: 2, "beta": 1, "alpha": 0}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "apiVersion": "v1", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key: the most preferred version first (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything else,
    the rest alphabetically), as kube-apiserver orders a group's versions."""
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (1, 0, 0, version)
    major, stability, minor = match.groups()
    return (0, -_STABILITY[stability], -int(major) * 1000 - int(minor or 0), version)


@dataclass(frozen=True, slots=True)
class Served:
    """The kinds one answer describes; ``read_only`` ones (Events: controllers record them) take get/list."""

    kinds: tuple[KindInfo, ...]
    read_only: tuple[KindInfo, ...] = ()

    def _groups(self) -> dict[str, list[str]]:
        versions: dict[str, set[str]] = {}
        for info in (*self.kinds, *self.read_only):
            if info.group:
                versions.setdefault(info.group, set()).add(info.version)
        return {group: sorted(found, key=version_priority) for group, found in sorted(versions.items())}

    def api_group_list(self) -> dict[str, Any]:
        groups = [_group_entry(group, versions) for group, versions in self._groups().items()]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, group: str) -> dict[str, Any] | None:
        versions = self._groups().get(group)
        if versions is None:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        served = [k for k in self.kinds if k.group == group and k.version == version]
        readable = [k for k in self.read_only if k.group == group and k.version == version]
        if not served and not readable:
            return None
        resources = [{**_resource(k), "verbs": READ_VERBS} for k in readable]
        for info in served:
            resources.append(_resource(info))
            if info.has_status:
                resources.append(_status_resource(info))
            if has_scale(info):
                resources.append(_scale_resource(info))
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def _resource(info: KindInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": VERBS,
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    return entry


def _status_resource(info: KindInfo) -> dict[str, Any]:
    return {
        "name": f"{info.plural}/status",
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": ["get", "patch", "update"],
    }


def _scale_resource(info: KindInfo) -> dict[str, Any]:
    """`{plural}/scale`: kubectl's scale client finds the Scale kind (autoscaling/v1) here."""
    return {
        "name": f"{info.plural}/scale",
        "singularName": "",
        "namespaced": info.namespaced,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
