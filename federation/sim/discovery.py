"""Discovery documents: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}[/{version}]``.

Invariants:
- Documents are derived from the registry on every request, so a kind introduced by a write (or a CRD) is
  discoverable right after.
- Only the legacy (unaggregated) discovery format is served, as ``application/json``; kubectl 1.32 asks for
  aggregated discovery first and falls back when the response is plain JSON.
"""

from __future__ import annotations

from typing import Any

from federation.sim.kinds import ALL_VERBS, Registry, ResourceType


def version_info(kubernetes_version: str) -> dict[str, str]:
    major, minor = kubernetes_version.lstrip("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": kubernetes_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _resource_entries(rtype: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(ALL_VERBS),
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        main["categories"] = list(rtype.categories)
    entries = [main]
    for sub in rtype.subresources:
        sub_kind = "Scale" if sub == "scale" else rtype.kind
        entry: dict[str, Any] = {
            "name": f"{rtype.plural}/{sub}",
            "singularName": "",
            "namespaced": rtype.namespaced,
            "kind": sub_kind,
            "verbs": ["get", "patch", "update"],
        }
        if sub == "scale":
            entry.update(group="autoscaling", version="v1")
        entries.append(entry)
    return entries


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """The APIResourceList for one group/version, or None when it is not served."""
    types = registry.in_group_version(group, version)
    if not types:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [e for r in sorted(types, key=lambda t: t.plural) for e in _resource_entries(r)],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = registry.groups().get(name)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = registry.groups()
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, versions) for name, versions in sorted(groups.items())],
    }
