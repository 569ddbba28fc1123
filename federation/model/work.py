"""Karmada Work (``work.karmada.io/v1alpha1``), semantics §8.2.

Source: karmada-io/karmada ``pkg/apis/work/v1alpha1/work_types.go``, ``pkg/util/names/names.go``.

Invariants:
- A Work lives in the execution namespace ``karmada-es-<cluster>`` of its target cluster.
- ``work_name`` is stable and unique per (namespace, name, kind) of the resource: ``<lower name>-<suffix>``
  where the suffix is FNV-1a-32 of ``lower("<ns>-<name>-<kind>")`` (``"<name>-<kind>"`` when cluster-scoped)
  rendered with apimachinery's ``SafeEncodeString`` alphabet. Karmada hashes a spew dump of the string, so the
  suffix is *not* bit-identical to Karmada's; nothing depends on that. As in Karmada's ``GenerateWorkName``,
  a ``:`` in the name part (RBAC names such as ``system:aggregate-to-view``) becomes ``.``, so the Work name
  stays a DNS subdomain; the suffix hashes the real name, so ``system:x`` and ``system.x`` still differ.
- ``workload.manifests`` are raw objects, kept as dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from federation.model.base import Int32, KubeModel, StrictBool, StrictStr
from federation.model.meta import Condition, ObjectMeta, find_condition

EXECUTION_NAMESPACE_PREFIX = "karmada-es-"
WORK_FINALIZER = "karmada.io/execution-controller"
CONDITION_APPLIED = "Applied"
CONDITION_PROGRESSING = "Progressing"
CONDITION_AVAILABLE = "Available"
CONDITION_DEGRADED = "Degraded"
CONDITION_DISPATCHING = "Dispatching"
WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"
WORK_NAME_ANNOTATION = "work.karmada.io/name"

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def execution_namespace(cluster: str) -> str:
    """``karmada-es-<cluster>``."""
    return f"{EXECUTION_NAMESPACE_PREFIX}{cluster}"


def cluster_of_execution_namespace(namespace: str) -> str | None:
    """The cluster name of an execution namespace, or None for any other namespace."""
    if namespace.startswith(EXECUTION_NAMESPACE_PREFIX):
        return namespace[len(EXECUTION_NAMESPACE_PREFIX) :] or None
    return None


def _fnv32a(text: str) -> int:
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def work_name(namespace: str, name: str, kind: str) -> str:
    """A stable Work name for a resource (see the module docstring)."""
    key = f"{namespace}-{name}-{kind}" if namespace else f"{name}-{kind}"
    digits = str(_fnv32a(key.lower()))
    suffix = "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in digits)
    return f"{name.replace(':', '.').lower()}-{suffix}"


class WorkloadTemplate(KubeModel):
    manifests: tuple[dict[str, Any], ...] | None = None


class WorkSpec(KubeModel):
    workload: WorkloadTemplate = WorkloadTemplate()
    suspend_dispatching: StrictBool | None = None
    preserve_resources_on_deletion: StrictBool | None = None

    def manifests(self) -> tuple[dict[str, Any], ...]:
        return self.workload.manifests or ()


class ResourceIdentifier(KubeModel):
    ordinal: Int32
    group: StrictStr | None = None
    version: StrictStr
    kind: StrictStr
    resource: StrictStr | None = None
    namespace: StrictStr | None = None
    name: StrictStr


class ManifestStatus(KubeModel):
    identifier: ResourceIdentifier
    status: dict[str, Any] | None = None
    health: Literal["Healthy", "Unhealthy", "Unknown", ""] | None = None


class WorkStatus(KubeModel):
    conditions: tuple[Condition, ...] | None = None
    manifest_statuses: tuple[ManifestStatus, ...] | None = None


class Work(KubeModel):
    api_version: Literal["work.karmada.io/v1alpha1"] = "work.karmada.io/v1alpha1"
    kind: Literal["Work"] = "Work"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkSpec = WorkSpec()
    status: WorkStatus | None = None

    def cluster(self) -> str | None:
        """The target cluster, from the execution namespace."""
        return cluster_of_execution_namespace(self.metadata.namespace or "")

    def applied(self) -> bool:
        condition = find_condition(self.status.conditions if self.status else None, CONDITION_APPLIED)
        return condition is not None and condition.status == "True"


@dataclass(frozen=True, slots=True)
class ManifestIdentity:
    """Which object a Work manifest is (Karmada's ``equalIdentifier`` compares these), without its body."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, manifest: Any) -> ManifestIdentity:
        """Its identity; a manifest that is not an object has none (empty fields), and keeps its ordinal."""
        if not isinstance(manifest, Mapping):
            return cls("", "", "", "")
        meta = manifest.get("metadata")
        if not isinstance(meta, Mapping):
            meta = {}
        return cls(
            str(manifest.get("apiVersion") or ""),
            str(manifest.get("kind") or ""),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )


@dataclass(frozen=True, slots=True)
class WorkStatusView:
    """A Work as status aggregation reads it: its cluster, whether it is being deleted, its status, and its
    manifests' identities by ordinal. The store reads it without the manifests' bodies (nearly all of a
    Work's bytes); ``of`` builds it from a whole Work."""

    cluster: str
    deleting: bool
    status: Mapping[str, Any]
    manifests: tuple[ManifestIdentity, ...]

    @classmethod
    def of(cls, work: Mapping[str, Any]) -> WorkStatusView:
        meta = work.get("metadata") or {}
        manifests = ((work.get("spec") or {}).get("workload") or {}).get("manifests") or []
        return cls(
            cluster=cluster_of_execution_namespace(str(meta.get("namespace") or "")) or "",
            deleting=bool(meta.get("deletionTimestamp")),
            status=work.get("status") or {},
            manifests=tuple(ManifestIdentity.of(m) for m in manifests),
        )
