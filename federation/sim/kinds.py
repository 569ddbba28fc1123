"""The resource types the simulator serves, and the registry that maps paths and kinds onto them.

Invariants:
- A resource type is identified by ``(group, plural)``; the version only matters for discovery. Objects keep
  the ``apiVersion`` they were written with.
- Built-in types are always present. Any other ``(group, version, plural)`` is registered the first time an
  object of it is written (kind taken from the body), or when a CustomResourceDefinition names it; unknown
  kinds are namespaced unless the write came through a cluster-scoped path.
- The registry is safe to read while another thread registers (a lock guards the dict).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource: ``apps/v1 deployments`` (group ``""`` is the core group)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    # Subresources listed in discovery; the simulator answers only status and scale reads/writes.
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = field(default=())

    def with_categories(self, *categories: str) -> ResourceType:
        return ResourceType(
            self.group,
            self.version,
            self.kind,
            self.plural,
            self.namespaced,
            self.short_names,
            self.subresources,
            categories,
        )

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)


def _core(kind: str, plural: str, namespaced: bool, *short: str, sub: tuple[str, ...] = ()) -> ResourceType:
    return ResourceType("", "v1", kind, plural, namespaced, short, sub)


_WORKLOAD_SUBS = ("status", "scale")

BUILTINS: tuple[ResourceType, ...] = (
    _core("Namespace", "namespaces", False, "ns", sub=("status",)),
    _core("Node", "nodes", False, "no", sub=("status",)),
    _core("Pod", "pods", True, "po", sub=("status",)),
    _core("Service", "services", True, "svc", sub=("status",)),
    _core("ConfigMap", "configmaps", True, "cm"),
    _core("Secret", "secrets", True),
    _core("ServiceAccount", "serviceaccounts", True, "sa"),
    _core("Event", "events", True, "ev"),
    _core("PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc", sub=("status",)),
    _core("PersistentVolume", "persistentvolumes", False, "pv", sub=("status",)),
    _core("Endpoints", "endpoints", True, "ep"),
    _core("LimitRange", "limitranges", True, "limits"),
    _core("ResourceQuota", "resourcequotas", True, "quota", sub=("status",)),
    ResourceType("apps", "v1", "Deployment", "deployments", True, ("deploy",), _WORKLOAD_SUBS),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), _WORKLOAD_SUBS),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), _WORKLOAD_SUBS),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",)),
    ResourceType("batch", "v1", "Job", "jobs", True, (), ("status",)),
    ResourceType("batch", "v1", "CronJob", "cronjobs", True, ("cj",), ("status",)),
    ResourceType(
        "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, ("crd",)
    ),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True),
    ResourceType("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("ing",), ("status",)),
    ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), ("status",)),
    ResourceType("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ("hpa",)),
)


# kubectl's ``get all`` expands the "all" category through discovery.
_IN_ALL = frozenset(
    {"pods", "services", "deployments", "statefulsets", "replicasets", "daemonsets", "jobs", "cronjobs"}
)
BUILTINS = tuple(r.with_categories("all") if r.plural in _IN_ALL else r for r in BUILTINS)


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` → ``("apps", "v1")``; ``"v1"`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


class Registry:
    """All resource types the simulator knows, keyed by ``(group, plural)`` and by ``(group, kind)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str], ResourceType] = {}
        # Extra versions of a group seen in writes (a CRD served at v1beta1 and v1, say).
        self._versions: dict[str, list[str]] = {}
        for rtype in BUILTINS:
            self.register(rtype)

    def register(self, rtype: ResourceType) -> ResourceType:
        """Add ``rtype`` unless its ``(group, plural)`` is known; returns the registered type."""
        with self._lock:
            existing = self._by_key.get(rtype.key)
            versions = self._versions.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
            if existing is not None:
                return existing
            self._by_key[rtype.key] = rtype
            return rtype

    def lookup(self, group: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._by_key.get((group, plural))

    def by_kind(self, group: str, kind: str) -> ResourceType | None:
        with self._lock:
            return next((r for r in self._by_key.values() if r.group == group and r.kind == kind), None)

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._by_key.values())

    def groups(self) -> dict[str, list[str]]:
        """Group name → served versions (first is preferred), the core group excluded."""
        with self._lock:
            return {g: list(v) for g, v in self._versions.items() if g}

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        with self._lock:
            if version not in self._versions.get(group, []):
                return []
            return [r for r in self._by_key.values() if r.group == group]
