"""Rendering Works from a binding and its template, and planning the Work writes (pure; no I/O).

Karmada's binding controller (`pkg/controllers/binding/common.go` `ensureWork`, `removeOrphanWorks`),
semantics §5 and §8.2.

Invariants:
- One Work per target cluster (`spec.clusters`, plus `spec.requiredBy[*].clusters`), in
  `karmada-es-<cluster>`, named `model.work.work_name(...)` of the template: stable per (cluster, resource).
- The manifest is the template pruned of server-owned metadata and status (Karmada's
  `RemoveIrrelevantFields`), with that cluster's replicas (`with_replicas`, ReviseReplica) when the
  binding is a workload and the target entry carries a count; anything else is propagated whole.
- A rendered Work is a function of (binding, template) only — no clock, no randomness — so rendering an
  unchanged pair twice gives an identical Work and the planner emits no write for it.
- Works to keep = rendered clusters + clusters of graceful-eviction tasks whose purge mode is not
  Directly: those Works are kept *frozen* (never re-rendered), as in Karmada's
  `ObtainBindingSpecExistingClusters`. Every other Work of the binding is tombstoned.
- A tombstone is `metadata.deletionTimestamp` (with the `karmada.io/execution-controller` finalizer
  pending): whoever syncs the Work's cluster removes the member objects, then the Work row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from federation.model import budget
from federation.model.binding import CLUSTER_PERMANENT_ID_LABEL, PERMANENT_ID_LABEL
from federation.model.jsonvalue import clone
from federation.model.work import (
    WORK_FINALIZER,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    execution_namespace,
    work_name,
)
from federation.model.workload import with_replicas

WORK_API_VERSION = "work.karmada.io/v1alpha1"
BINDING_NAMESPACE_ANNOTATION = "resourcebinding.karmada.io/namespace"
BINDING_NAME_ANNOTATION = "resourcebinding.karmada.io/name"
CLUSTER_BINDING_NAME_ANNOTATION = "clusterresourcebinding.karmada.io/name"
TEMPLATE_GENERATION_ANNOTATION = "resourcetemplate.karmada.io/generation"
TEMPLATE_UID_ANNOTATION = "resourcetemplate.karmada.io/uid"
MANAGED_LABEL = "karmada.io/managed"
DELETION_TIMESTAMP = "deletionTimestamp"
DIRECT_PURGE_MODES = frozenset({"Directly", "Immediately"})  # Immediately: the <=v1.14 name

# Karmada's RemoveIrrelevantFields: set by the API server, meaningless (or refused) on a member.
_SERVER_METADATA = (
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
    "uid",
    "ownerReferences",
    "finalizers",
)
_BUDGET_ANNOTATIONS = (budget.RESCHEDULE_COUNT_ANNOTATION, budget.TRIED_CLUSTERS_ANNOTATION)
_DEPLOYMENT_REVISION_ANNOTATIONS = (
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
)


@dataclass(frozen=True, slots=True)
class Target:
    """One cluster a binding renders a Work for; ``replicas`` None means "propagate whole"."""

    cluster: str
    replicas: int | None


@dataclass(frozen=True, slots=True)
class WorkKey:
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class WorkPlan:
    """What to write for one binding: whole Work manifests to create or replace, Works to tombstone.

    ``resurrect`` are replaced Works that were tombstoned: their member objects may already be gone,
    so they must be queued for sync even if their spec did not change.
    """

    create: tuple[dict[str, Any], ...] = ()
    replace: tuple[dict[str, Any], ...] = ()
    resurrect: tuple[WorkKey, ...] = ()
    tombstone: tuple[WorkKey, ...] = ()
    # True while a Directly-purged cluster still has a Work: nothing is created or updated until it is gone.
    blocked: bool = False

    @property
    def writes(self) -> int:
        return len(self.create) + len(self.replace) + len(self.tombstone)


# -- targets -----------------------------------------------------------------------------------------


def targets_of(binding: Mapping[str, Any]) -> list[Target]:
    """The clusters to render for: ``spec.clusters`` then ``requiredBy`` clusters not already listed."""
    spec = binding.get("spec") or {}
    workload = _is_workload(spec)
    found: dict[str, Target] = {}
    entries = list(spec.get("clusters") or [])
    for snapshot in spec.get("requiredBy") or []:
        entries.extend((snapshot or {}).get("clusters") or [])
    for entry in entries:
        name = str((entry or {}).get("name") or "")
        if name and name not in found:
            replicas = entry.get("replicas")
            found[name] = Target(name, int(replicas) if workload and replicas is not None else None)
    return list(found.values())


def _is_workload(spec: Mapping[str, Any]) -> bool:
    """Karmada: replica division applies iff replicas > 0 or replicaRequirements is set."""
    return int(spec.get("replicas") or 0) > 0 or spec.get("replicaRequirements") is not None


def held_clusters(binding: Mapping[str, Any]) -> set[str]:
    """Clusters whose Work a graceful-eviction task keeps alive (purge mode other than Directly)."""
    tasks = (binding.get("spec") or {}).get("gracefulEvictionTasks") or []
    return {
        str(t["fromCluster"])
        for t in tasks
        if isinstance(t, Mapping) and t.get("fromCluster") and t.get("purgeMode") not in DIRECT_PURGE_MODES
    }


def direct_purge_clusters(binding: Mapping[str, Any]) -> set[str]:
    tasks = (binding.get("spec") or {}).get("gracefulEvictionTasks") or []
    return {
        str(t["fromCluster"])
        for t in tasks
        if isinstance(t, Mapping) and t.get("fromCluster") and t.get("purgeMode") in DIRECT_PURGE_MODES
    }


# -- rendering ---------------------------------------------------------------------------------------


def permanent_id(binding: Mapping[str, Any]) -> tuple[str, str]:
    """(label key, value): the binding's permanent-id label, or its uid when the label is absent."""
    meta = binding.get("metadata") or {}
    key = PERMANENT_ID_LABEL if meta.get("namespace") else CLUSTER_PERMANENT_ID_LABEL
    return key, str((meta.get("labels") or {}).get(key) or meta.get("uid") or "")


def binding_annotations(binding: Mapping[str, Any]) -> dict[str, str]:
    """The annotations naming the binding (they resolve a Work's ``binding_id`` in the store)."""
    meta = binding.get("metadata") or {}
    if meta.get("namespace"):
        return {
            BINDING_NAMESPACE_ANNOTATION: str(meta["namespace"]),
            BINDING_NAME_ANNOTATION: str(meta["name"]),
        }
    return {CLUSTER_BINDING_NAME_ANNOTATION: str(meta["name"])}


def render_works(binding: Mapping[str, Any], template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every Work the binding asks for now, as full Work manifests."""
    return [render_work(binding, template, target) for target in targets_of(binding)]


def render_work(binding: Mapping[str, Any], template: Mapping[str, Any], target: Target) -> dict[str, Any]:
    meta = template.get("metadata") or {}
    name = work_name(str(meta.get("namespace") or ""), str(meta["name"]), str(template["kind"]))
    namespace = execution_namespace(target.cluster)
    id_key, id_value = permanent_id(binding)
    manifest = render_manifest(binding, template, target)
    manifest["metadata"].setdefault("annotations", {}).update(
        {WORK_NAMESPACE_ANNOTATION: namespace, WORK_NAME_ANNOTATION: name}
    )
    work: dict[str, Any] = {
        "apiVersion": WORK_API_VERSION,
        "kind": "Work",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {id_key: id_value},
            "annotations": binding_annotations(binding),
            "finalizers": [WORK_FINALIZER],
        },
        "spec": {"workload": {"manifests": [manifest]}},
    }
    work["spec"].update(_dispatch_options(binding, target.cluster))
    return work


def render_manifest(
    binding: Mapping[str, Any], template: Mapping[str, Any], target: Target
) -> dict[str, Any]:
    """The object the member gets: pruned template, this cluster's replicas, Karmada's labels."""
    manifest = prune(template)
    if target.replicas is not None:
        manifest = with_replicas(manifest, target.replicas)
    meta = manifest["metadata"]
    id_key, id_value = permanent_id(binding)
    meta["labels"] = {**(meta.get("labels") or {}), id_key: id_value, MANAGED_LABEL: "true"}
    source = template.get("metadata") or {}
    annotations = {**(meta.get("annotations") or {}), **binding_annotations(binding)}
    annotations[TEMPLATE_UID_ANNOTATION] = str(source.get("uid") or "")
    if source.get("generation"):
        annotations[TEMPLATE_GENERATION_ANNOTATION] = str(source["generation"])
    meta["annotations"] = annotations
    return manifest


def prune(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template without status and server-owned metadata (Karmada ``RemoveIrrelevantFields``)."""
    manifest = clone(dict(template))
    manifest.pop("status", None)
    meta = manifest.setdefault("metadata", {})
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    if manifest.get("kind") == "Deployment":
        for key in _DEPLOYMENT_REVISION_ANNOTATIONS:
            (meta.get("annotations") or {}).pop(key, None)
    # The failover budget's bookkeeping is the control plane's: a budget write must not re-apply Works.
    for key in _BUDGET_ANNOTATIONS:
        (meta.get("annotations") or {}).pop(key, None)
    if manifest.get("kind") == "Service":
        _prune_cluster_ip(manifest)
    if "annotations" in meta and not meta["annotations"]:
        del meta["annotations"]
    return manifest


def _prune_cluster_ip(service: dict[str, Any]) -> None:
    # An allocated clusterIP belongs to the control plane's view; a headless Service ("None") keeps it.
    spec = service.get("spec") or {}
    if "clusterIP" in spec and spec["clusterIP"] != "None":
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)


def _dispatch_options(binding: Mapping[str, Any], cluster: str) -> dict[str, Any]:
    spec = binding.get("spec") or {}
    options: dict[str, Any] = {}
    suspension = spec.get("suspension") or {}
    on_clusters = (suspension.get("dispatchingOnClusters") or {}).get("clusterNames") or []
    if suspension.get("dispatching") or cluster in on_clusters:
        options["suspendDispatching"] = True
    if spec.get("preserveResourcesOnDeletion") is not None:
        options["preserveResourcesOnDeletion"] = bool(spec["preserveResourcesOnDeletion"])
    return options


# -- planning ----------------------------------------------------------------------------------------


def is_tombstoned(work: Mapping[str, Any]) -> bool:
    return bool((work.get("metadata") or {}).get(DELETION_TIMESTAMP))


def cluster_of(work: Mapping[str, Any]) -> str:
    namespace = str((work.get("metadata") or {}).get("namespace") or "")
    prefix = execution_namespace("")
    return namespace[len(prefix) :] if namespace.startswith(prefix) else ""


def plan_works(
    binding: Mapping[str, Any], desired: Sequence[dict[str, Any]], existing: Sequence[Mapping[str, Any]]
) -> WorkPlan:
    """Writes that bring the binding's Works from ``existing`` to ``desired`` (nothing when equal)."""
    by_key = {key_of(w): w for w in existing}
    wanted = {key_of(w) for w in desired}
    held = held_clusters(binding)
    keep = wanted | {key for key, work in by_key.items() if cluster_of(work) in held}
    tombstone = tuple(
        key
        for key, work in sorted(by_key.items(), key=_sort_key)
        if key not in keep and not is_tombstoned(work)
    )
    direct = direct_purge_clusters(binding)
    if any(cluster_of(w) in direct and key not in wanted for key, w in by_key.items()):
        # Karmada's checkDirectPurgeOrphanWorks: the old copy goes before any new one is written.
        return WorkPlan(tombstone=tombstone, blocked=True)
    create = tuple(w for w in desired if key_of(w) not in by_key)
    changed = [w for w in desired if key_of(w) in by_key and _differs(by_key[key_of(w)], w)]
    resurrect = tuple(key_of(w) for w in changed if is_tombstoned(by_key[key_of(w)]))
    replace = tuple(_with_version(w, by_key[key_of(w)]) for w in changed)
    return WorkPlan(create=create, replace=replace, resurrect=resurrect, tombstone=tombstone)


def orphans_to_tombstone(orphans: Iterable[Mapping[str, Any]]) -> tuple[WorkKey, ...]:
    """Orphans we rendered (they name a binding) that are not tombstoned yet; hand-made Works stay."""
    return tuple(
        key_of(w)
        for w in orphans
        if not is_tombstoned(w)
        and set((w.get("metadata") or {}).get("annotations") or {}) & _BINDING_ANNOTATION_KEYS
    )


_BINDING_ANNOTATION_KEYS = frozenset(
    {BINDING_NAMESPACE_ANNOTATION, BINDING_NAME_ANNOTATION, CLUSTER_BINDING_NAME_ANNOTATION}
)


def key_of(work: Mapping[str, Any]) -> WorkKey:
    meta = work.get("metadata") or {}
    return WorkKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _sort_key(item: tuple[WorkKey, Any]) -> tuple[str, str]:
    return item[0].namespace, item[0].name


def _differs(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    old, new = existing.get("metadata") or {}, desired.get("metadata") or {}
    return (
        is_tombstoned(existing)
        or (old.get("labels") or {}) != (new.get("labels") or {})
        or (old.get("annotations") or {}) != (new.get("annotations") or {})
        or (old.get("finalizers") or []) != (new.get("finalizers") or [])
        or existing.get("spec") != desired.get("spec")
    )


def _with_version(desired: dict[str, Any], existing: Mapping[str, Any]) -> dict[str, Any]:
    """``desired`` replacing ``existing``: keeps its resourceVersion (optimistic concurrency)."""
    work = clone(desired)
    work["metadata"]["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
    return work


def tombstoned(work: Mapping[str, Any], timestamp: str) -> dict[str, Any]:
    """``work`` marked for deletion at ``timestamp`` (kept, with its resourceVersion)."""
    marked = clone(dict(work))
    marked["metadata"][DELETION_TIMESTAMP] = timestamp
    marked["metadata"].setdefault("finalizers", [WORK_FINALIZER])
    return marked
