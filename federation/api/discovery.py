"""Discovery documents (`/api`, `/apis`, `/apis/{group}/{version}`), built from the kind registry."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from federation.model import kinds
from federation.model.kinds import KindInfo

VERBS = ["create", "delete", "get", "list", "update"]


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "apiVersion": "v1", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def api_group_list() -> dict[str, Any]:
    ordered = sorted((k for k in kinds.all_kinds() if k.group), key=lambda k: (k.group, k.version))
    groups = []
    for group, members in groupby(ordered, key=lambda k: k.group):
        versions = sorted({m.version for m in members})
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[-1]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str) -> dict[str, Any] | None:
    for entry in api_group_list()["groups"]:
        if entry["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **entry}
    return None


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    served = [k for k in kinds.all_kinds() if k.group == group and k.version == version]
    if not served:
        return None
    group_version = f"{group}/{version}" if group else version
    resources: list[dict[str, Any]] = []
    for info in served:
        resources.append(_resource(info))
        if info.has_status:
            resources.append(
                {
                    "name": f"{info.plural}/status",
                    "singularName": "",
                    "namespaced": info.namespaced,
                    "kind": info.kind,
                    "verbs": ["get", "update"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


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
