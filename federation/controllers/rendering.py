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
- The template is pruned once per binding and revised once per distinct replica count; the Works of one
  binding share what their clusters do not change (read-only: clone a rendered Work before editing it).
- The planner compares a stored Work with its rendering by labels, annotations, finalizers and spec; a
  Work summarised without its manifests (``store.works.WorkSummary``) compares by ``SpecDigest`` (the
  manifests' canonical-JSON hash), so seeing that nothing changed needs no manifest loaded.
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
from federation.store.works import SpecDigest

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


@dataclass(frozen=True, slots=True)
class StoredWork:
    """An existing Work as the planner reads it. ``spec`` is the whole spec, or a ``SpecDigest`` when the
    Work was loaded without its manifests; a rendered Work is compared with it in the same form."""

    key: WorkKey
    resource_version: str | None
    tombstoned: bool
    labels: Mapping[str, Any]
    annotations: Mapping[str, Any]
    finalizers: Sequence[Any]
    spec: Any

    @classmethod
    def of(cls, work: Mapping[str, Any]) -> StoredWork:
        """From a whole Work manifest."""
        meta = work.get("metadata") or {}
        return cls(
            key=key_of(work),
            resource_version=meta.get("resourceVersion"),
            tombstoned=is_tombstoned(work),
            labels=meta.get("labels") or {},
            annotations=meta.get("annotations") or {},
            finalizers=meta.get("finalizers") or [],
            spec=work.get("spec"),
        )

    @property
    def cluster(self) -> str:
        return cluster_of_namespace(self.key.namespace)

    def differs(self, desired: Mapping[str, Any]) -> bool:
        """Whether writing ``desired`` over this Work changes it (a tombstoned Work always is revived)."""
        meta = desired.get("metadata") or {}
        spec = desired.get("spec")
        return (
            self.tombstoned
            or self.labels != (meta.get("labels") or {})
            or self.annotations != (meta.get("annotations") or {})
            or self.finalizers != (meta.get("finalizers") or [])
            or self.spec != (SpecDigest.of(spec) if isinstance(self.spec, SpecDigest) else spec)
        )


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
    """Every Work the binding asks for now, as full Work manifests (sharing read-only parts: see the
    invariants)."""
    targets = targets_of(binding)
    if not targets:
        return []
    pruned = prune(template)
    name = _work_name(template)
    by_replicas: dict[int | None, dict[str, Any]] = {}
    works = []
    for target in targets:
        manifest = by_replicas.get(target.replicas)
        if manifest is None:
            manifest = by_replicas[target.replicas] = _revised(binding, template, pruned, target.replicas)
        works.append(_work(binding, name, target, manifest))
    return works


def render_work(binding: Mapping[str, Any], template: Mapping[str, Any], target: Target) -> dict[str, Any]:
    return _work(binding, _work_name(template), target, render_manifest(binding, template, target))


def _work_name(template: Mapping[str, Any]) -> str:
    meta = template.get("metadata") or {}
    return work_name(str(meta.get("namespace") or ""), str(meta["name"]), str(template["kind"]))


def _work(binding: Mapping[str, Any], name: str, target: Target, manifest: dict[str, Any]) -> dict[str, Any]:
    """The Work ``name`` of ``target`` around ``manifest`` (shared, not edited: its metadata is copied)."""
    namespace = execution_namespace(target.cluster)
    id_key, id_value = permanent_id(binding)
    manifest_meta = manifest["metadata"]
    annotations = {
        **(manifest_meta.get("annotations") or {}),
        WORK_NAMESPACE_ANNOTATION: namespace,
        WORK_NAME_ANNOTATION: name,
    }
    revised = {**manifest, "metadata": {**manifest_meta, "annotations": annotations}}
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
        "spec": {"workload": {"manifests": [revised]}},
    }
    work["spec"].update(_dispatch_options(binding, target.cluster))
    return work


def render_manifest(
    binding: Mapping[str, Any], template: Mapping[str, Any], target: Target
) -> dict[str, Any]:
    """The object the member gets: pruned template, this cluster's replicas, Karmada's labels."""
    return _revised(binding, template, prune(template), target.replicas)


def _revised(
    binding: Mapping[str, Any], template: Mapping[str, Any], pruned: dict[str, Any], replicas: int | None
) -> dict[str, Any]:
    """``pruned`` with ``replicas`` (a copy; None: ``pruned`` itself) and Karmada's labels and annotations
    (in new metadata dicts, so ``pruned`` is never edited)."""
    manifest = pruned if replicas is None else with_replicas(pruned, replicas)
    meta = manifest["metadata"]
    id_key, id_value = permanent_id(binding)
    source = template.get("metadata") or {}
    annotations = {**(meta.get("annotations") or {}), **binding_annotations(binding)}
    annotations[TEMPLATE_UID_ANNOTATION] = str(source.get("uid") or "")
    if source.get("generation"):
        annotations[TEMPLATE_GENERATION_ANNOTATION] = str(source["generation"])
    labels = {**(meta.get("labels") or {}), id_key: id_value, MANAGED_LABEL: "true"}
    return {**manifest, "metadata": {**meta, "labels": labels, "annotations": annotations}}


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


def cluster_of_namespace(namespace: str) -> str:
    prefix = execution_namespace("")
    return namespace[len(prefix) :] if namespace.startswith(prefix) else ""


def plan_works(
    binding: Mapping[str, Any],
    desired: Sequence[dict[str, Any]],
    existing: Sequence[Mapping[str, Any] | StoredWork],
) -> WorkPlan:
    """Writes that bring the binding's Works from ``existing`` (manifests, or ``StoredWork``s) to
    ``desired`` (nothing when equal)."""
    by_key = {w.key: w for w in (w if isinstance(w, StoredWork) else StoredWork.of(w) for w in existing)}
    keyed = [(key_of(w), w) for w in desired]
    wanted = {key for key, _ in keyed}
    held = held_clusters(binding)
    keep = wanted | {key for key, work in by_key.items() if work.cluster in held}
    tombstone = tuple(
        key for key in sorted(by_key, key=_sort_key) if key not in keep and not by_key[key].tombstoned
    )
    direct = direct_purge_clusters(binding)
    if any(work.cluster in direct and key not in wanted for key, work in by_key.items()):
        # Karmada's checkDirectPurgeOrphanWorks: the old copy goes before any new one is written.
        return WorkPlan(tombstone=tombstone, blocked=True)
    create = tuple(w for key, w in keyed if key not in by_key)
    changed = [(w, by_key[key]) for key, w in keyed if key in by_key and by_key[key].differs(w)]
    resurrect = tuple(old.key for _, old in changed if old.tombstoned)
    replace = tuple(_with_version(w, old.resource_version) for w, old in changed)
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


def _sort_key(key: WorkKey) -> tuple[str, str]:
    return key.namespace, key.name


def _with_version(desired: dict[str, Any], resource_version: str | None) -> dict[str, Any]:
    """``desired`` replacing a stored Work: keeps its resourceVersion (optimistic concurrency)."""
    work = clone(desired)
    work["metadata"]["resourceVersion"] = resource_version
    return work


def tombstoned(work: Mapping[str, Any], timestamp: str) -> dict[str, Any]:
    """``work`` marked for deletion at ``timestamp`` (kept, with its resourceVersion)."""
    marked = clone(dict(work))
    _mark_deleted(marked["metadata"], timestamp)
    return marked


def tombstoned_extra(metadata_extra: Mapping[str, Any] | None, timestamp: str) -> dict[str, Any]:
    """What ``tombstoned`` makes of a stored Work's extra metadata (all but name, namespace, labels,
    annotations and the server's fields): a batch writer tombstones rows without copying whole Works."""
    marked = clone(dict(metadata_extra or {}))
    _mark_deleted(marked, timestamp)
    return marked


def _mark_deleted(metadata: dict[str, Any], timestamp: str) -> None:
    metadata[DELETION_TIMESTAMP] = timestamp
    metadata.setdefault("finalizers", [WORK_FINALIZER])
