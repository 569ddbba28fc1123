"""Kubernetes REST paths → what they address.

    /api                                     APIVersions
    /api/v1                                  APIResourceList of the core group
    /api/v1/{plural}[/{name}[/status|/scale]]  cluster-scoped object, or a namespaced kind across namespaces
    /api/v1/namespaces/{ns}/{plural}[/{name}[/status|/scale]]
    /apis                                    APIGroupList
    /apis/{group}/{version}                  APIResourceList
    /apis/{group}/{version}/...              as under /api/v1

`namespaces/{name}/status` and `namespaces/{name}` address the Namespace object itself (core group).
Parsing is pure; resolving a plural to a kind is the caller's (an unregistered plural may be a template).
"""

from __future__ import annotations

from dataclasses import dataclass

SUBRESOURCES = frozenset({"status", "scale"})


@dataclass(frozen=True, slots=True)
class ObjectPath:
    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True, slots=True)
class DiscoveryPath:
    group: str | None  # None: the list of groups (/apis) or versions (/api)
    version: str | None
    core: bool


class PathError(ValueError):
    """A path that names no resource."""


def parse(prefix: str, rest: str) -> ObjectPath | DiscoveryPath:
    segments = [s for s in rest.split("/") if s]
    if prefix == "api":
        if not segments:
            return DiscoveryPath(None, None, core=True)
        return _group_version("", segments[0], segments[1:], core=True)
    if len(segments) < 2:
        if len(segments) == 1:
            return DiscoveryPath(segments[0], None, core=False)
        return DiscoveryPath(None, None, core=False)
    return _group_version(segments[0], segments[1], segments[2:], core=False)


def _group_version(group: str, version: str, rest: list[str], core: bool) -> ObjectPath | DiscoveryPath:
    if not rest:
        return DiscoveryPath(group, version, core=core)
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in SUBRESOURCES:
        return _object(group, version, rest[2:], namespace=rest[1])
    return _object(group, version, rest, namespace=None)


def _object(group: str, version: str, rest: list[str], namespace: str | None) -> ObjectPath:
    if len(rest) > 3:
        raise PathError(f"the path /{'/'.join(rest)} names no resource")
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in SUBRESOURCES:
        raise PathError(f"the subresource {sub!r} is not served")
    return ObjectPath(group, version, rest[0], namespace, name, sub)
