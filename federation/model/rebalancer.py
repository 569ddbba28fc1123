"""Karmada WorkloadRebalancer (``apps.karmada.io/v1alpha1``, cluster-scoped), semantics §7, and the alias
spelling some blog posts use.

Source: karmada-io/karmada ``pkg/apis/apps/v1alpha1/workloadrebalancer_types.go`` and the CRD
``charts/karmada/_crds/bases/apps/apps.karmada.io_workloadrebalancers.yaml``.

Invariants:
- ``spec.workloads`` has at least one item; an empty ``namespace`` means a cluster-scoped resource (its
  binding is a ClusterResourceBinding).
- ``spec`` may be modified after creation, with Karmada's documented rules (``rebalancing.sync_workloads``):
  an added workload is processed and added to status; a removed one stays in status only if it had
  succeeded; a modified entry is a removal plus an addition.
- ``ttlSecondsAfterFinished``: unset → never deleted; 0 → deleted right after finishing.
- Observed workloads sort by the string ``"apiVersion kind namespace name"`` (``ObjectReference.sort_key``).
- Each observed workload also records ``rescheduleTriggeredAt``, the trigger time it stands for (ours; a
  Go client ignores the field): the rebalancer's creation for the first workloads, the time it was seen
  for one added later.
- The alias form (``policy.karmada.io/v1alpha1``, ``spec.workload`` or ``spec.workloadList``) is converted
  to Karmada's form before validation (``canonical_form``), with a warning per alias used; nothing in the
  alias spelling is ever stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from federation.model.base import Int32, Int64, KubeModel, StrictStr
from federation.model.binding import binding_name
from federation.model.meta import FieldError, ObjectMeta, forbidden, invalid

API_VERSION = "apps.karmada.io/v1alpha1"
ALIAS_API_VERSION = "policy.karmada.io/v1alpha1"
KIND = "WorkloadRebalancer"
RESULT_SUCCESSFUL = "Successful"
RESULT_FAILED = "Failed"
REASON_BINDING_NOT_FOUND = "ReferencedBindingNotFound"
# Alias field → what it means in Karmada's form.
_ALIAS_FIELDS = {"workload": "one workload", "workloadList": "a list of workloads"}


class ObjectReference(KubeModel):
    api_version: StrictStr
    kind: StrictStr
    name: StrictStr
    namespace: StrictStr | None = None

    def sort_key(self) -> str:
        return f"{self.api_version} {self.kind} {self.namespace or ''} {self.name}"

    def binding_name(self) -> str:
        """The name of the (Cluster)ResourceBinding this workload is propagated by."""
        return binding_name(self.name, self.kind)

    def is_cluster_scoped(self) -> bool:
        return not self.namespace


class WorkloadRebalancerSpec(KubeModel):
    workloads: tuple[ObjectReference, ...]
    ttl_seconds_after_finished: Int32 | None = None


class ObservedWorkload(KubeModel):
    workload: ObjectReference
    result: Literal["Successful", "Failed", ""] | None = None
    reason: StrictStr | None = None
    reschedule_triggered_at: datetime | None = None


class WorkloadRebalancerStatus(KubeModel):
    observed_workloads: tuple[ObservedWorkload, ...] | None = None
    observed_generation: Int64 | None = None
    finish_time: datetime | None = None


class WorkloadRebalancer(KubeModel):
    api_version: Literal["apps.karmada.io/v1alpha1"] = "apps.karmada.io/v1alpha1"
    kind: Literal["WorkloadRebalancer"] = "WorkloadRebalancer"
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadRebalancerSpec
    status: WorkloadRebalancerStatus | None = None


# ---------------------------------------------------------------------------------------------------------
# the alias form


@dataclass(frozen=True, slots=True)
class Canonical:
    """A manifest in Karmada's form, what was converted (one warning each), and what could not be."""

    manifest: dict[str, Any]
    warnings: tuple[str, ...] = ()
    errors: tuple[FieldError, ...] = ()


def canonical_form(manifest: Mapping[str, Any]) -> Canonical:
    """The rebalancer in Karmada's form; any other manifest unchanged (a shallow copy, no warnings)."""
    out = dict(manifest)
    if out.get("kind") != KIND or out.get("apiVersion") not in (API_VERSION, ALIAS_API_VERSION):
        return Canonical(out)
    warnings: list[str] = []
    if out["apiVersion"] == ALIAS_API_VERSION:
        out["apiVersion"] = API_VERSION
        warnings.append(
            f"{ALIAS_API_VERSION} {KIND} is an alias: stored as {API_VERSION} {KIND} (Karmada's form); "
            "write that in the manifest"
        )
    spec = out.get("spec")
    if not isinstance(spec, Mapping) or not any(field in spec for field in _ALIAS_FIELDS):
        return Canonical(out, tuple(warnings))
    errors = _alias_errors(spec)
    if errors:
        return Canonical(out, tuple(warnings), tuple(errors))
    (field,) = [f for f in _ALIAS_FIELDS if f in spec]
    value = spec[field]
    workloads = [value] if field == "workload" else list(value)
    out["spec"] = {**{k: v for k, v in spec.items() if k != field}, "workloads": workloads}
    warnings.append(
        f"spec.{field} ({_ALIAS_FIELDS[field]}) is an alias: stored as spec.workloads (Karmada's form); "
        "write that in the manifest"
    )
    return Canonical(out, tuple(warnings))


def _alias_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """One spelling of the workload list, of the right shape."""
    given = [f for f in ("workloads", *_ALIAS_FIELDS) if f in spec]
    if len(given) > 1:
        detail = (
            "give the workloads once: spec.workloads, or one of its aliases spec.workload, spec.workloadList"
        )
        return [forbidden(f"spec.{field}", detail) for field in given[1:]]
    if "workload" in spec and not isinstance(spec["workload"], Mapping):
        return [invalid("spec.workload", spec["workload"], "must be an object (one workload)")]
    if "workloadList" in spec and not isinstance(spec["workloadList"], list):
        return [invalid("spec.workloadList", spec["workloadList"], "must be a list of workloads")]
    return []
