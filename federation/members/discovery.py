"""Discovery for member clients: kind → (plural, namespaced), and Karmada's ``apiEnablements``.

Invariants:
- Resource lists are cached per group/version; a kind missing from the cache triggers one refresh of its
  group/version before falling back to the plural guess (so a CRD installed after the first call is found).
- ``apiEnablements`` has Karmada's shape and order (``helper.GetAPIEnablements``): one entry per served
  group/version sorted by groupVersion, each with its resources (subresources skipped) sorted by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from federation.members.errors import MemberError
from federation.model.kinds import guess_plural

GetJson = Callable[[str], Any]


def _gv_path(group_version: str) -> str:
    return f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"


class Discovery:
    """Cached discovery over a JSON GET function (so it is testable without a server)."""

    def __init__(self, get_json: GetJson) -> None:
        self._get = get_json
        self._lock = threading.Lock()
        self._lists: dict[str, dict[str, Any] | None] = {}

    def resource_list(self, group_version: str, refresh: bool = False) -> dict[str, Any] | None:
        with self._lock:
            if not refresh and group_version in self._lists:
                return self._lists[group_version]
        try:
            found: dict[str, Any] | None = self._get(_gv_path(group_version))
        except MemberError as err:
            if err.kind != "not_found":
                raise
            found = None
        with self._lock:
            self._lists[group_version] = found
        return found

    def resolve(self, api_version: str, kind: str, namespace: str | None) -> tuple[str, bool]:
        """(plural, namespaced) for a kind; unknown kinds guess the plural and follow ``namespace``."""
        for refresh in (False, True):
            for resource in (self.resource_list(api_version, refresh) or {}).get("resources") or []:
                if resource.get("kind") == kind and "/" not in resource.get("name", ""):
                    return str(resource["name"]), bool(resource.get("namespaced"))
        return guess_plural(kind), namespace is not None

    def group_versions(self) -> list[str]:
        versions = [str(v) for v in (self._get("/api") or {}).get("versions") or []]
        for group in (self._get("/apis") or {}).get("groups") or []:
            versions += [str(v["groupVersion"]) for v in group.get("versions") or []]
        return versions

    def all_resource_lists(self) -> list[dict[str, Any]]:
        """Fresh resource lists for every served group/version (refreshing the cache)."""
        lists = [self.resource_list(gv, refresh=True) for gv in self.group_versions()]
        return [rl for rl in lists if rl]


def enablements_from(resource_lists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    enablements = []
    for resource_list in resource_lists:
        resources = [
            {"name": r["name"], "kind": r.get("kind", "")}
            for r in resource_list.get("resources") or []
            if "/" not in r.get("name", "")
        ]
        resources.sort(key=lambda r: r["name"])
        enablements.append({"groupVersion": resource_list.get("groupVersion", ""), "resources": resources})
    enablements.sort(key=lambda e: e["groupVersion"])
    return enablements
