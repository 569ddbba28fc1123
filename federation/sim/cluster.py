"""The simulated cluster's API semantics: the verbs a Kubernetes API server offers, over the object store.

Invariants:
- Every verb runs under the store lock, so each request is atomic against every other, and inside
  ``request()``: its start writes every status change due by the clock (pods turning Ready, restarts, the
  faults' unhealthy set), its end touches the workloads whose pods it changed (``status_writes``), so what a
  read renders is what its resourceVersion stands for. Watches settle the same way at each poll.
- Writes stamp identity (uid, creationTimestamp), bump ``generation`` only when something outside
  ``metadata`` and ``status`` changes, and skip the write entirely (same resourceVersion) when nothing
  changed, so applying the same manifest twice is a no-op.
- A ``resourceVersion`` in a PUT body (or one left in a patched object) that is not the stored one is a
  409 Conflict. Namespaced writes into a missing namespace are 404, as on a real server.
- Patches follow ``federation.model.patching`` (shared with the federation API); custom resources (groups
  outside ``patching.BUILTIN_GROUPS``) have atomic lists and answer 415 to a strategic merge patch.
- Pods and workloads have server-owned status: status sent on the main resource is ignored; other kinds
  keep the status they were created with and change it only through the ``status`` subresource.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from federation.model import patching
from federation.model.jsonvalue import clone
from federation.model.patching import (
    APPLY,
    ApplyConflict,
    PatchError,
    record_update,
    server_side_apply,
)
from federation.sim import errors
from federation.sim.config import Faults, SimulatorConfig
from federation.sim.kinds import Registry, ResourceType
from federation.sim.nodes import seed_objects
from federation.sim.pods import rfc3339
from federation.sim.runtime import Runtime, is_pod, is_workload
from federation.sim.selectors import Predicate, label_selector
from federation.sim.store import ObjectStore
from federation.sim.validation import check_body, check_workload, register_crd, scale_of

_SERVER_STATUS = ("Pod", "Deployment", "StatefulSet", "ReplicaSet")


class SimCluster:
    """One member cluster's API state: objects, pods, nodes and their simulated behaviour."""

    def __init__(
        self, config: SimulatorConfig, faults: Faults, clock: Callable[[], float] = time.time
    ) -> None:
        self.config = config
        self.faults = faults
        self.clock = clock
        self.registry = Registry()
        self.store = ObjectStore()
        self.runtime = Runtime(self.store, self.registry, config, faults, clock)
        self._depth = 0  # nested verbs (a collection delete lists) settle once, in the outermost
        for plural, obj in seed_objects(config):
            self._create(self._type("", plural), obj, None)

    @contextmanager
    def request(self) -> Iterator[None]:
        """One request: the store lock held, status due by now written first, owners touched last."""
        with self.store.lock:
            self._depth += 1
            outermost = self._depth == 1
            since = self.store.rv
            try:
                if outermost:
                    self.runtime.begin()
                since = self.store.rv
                yield
            finally:
                self._depth -= 1
                if outermost:
                    self.runtime.finish(since)

    def _type(self, group: str, plural: str) -> ResourceType:
        rtype = self.registry.lookup(group, plural)
        if rtype is None:
            raise errors.no_resource()
        return rtype

    # --- reads -----------------------------------------------------------------------------------

    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        with self.request():
            return self._render(rtype, self._existing(rtype, namespace, name))

    def list_objects(
        self, rtype: ResourceType, namespace: str | None, match: Predicate
    ) -> list[dict[str, Any]]:
        with self.request():
            return [o for o in self._rendered(rtype, self.store.list_objects(rtype, namespace)) if match(o)]

    def list_page(
        self,
        rtype: ResourceType,
        namespace: str | None,
        selector: str,
        fields: Predicate | None,
        after: tuple[str, str] | None,
        size: int | None,
    ) -> tuple[list[dict[str, Any]], int, str]:
        """Up to ``size`` objects (all when None) of those a LIST selects whose key (namespace, name) sorts
        after ``after``, rendered; how many are left after them; and the store's resourceVersion they were
        read at. A continuation resumes after the last key a page returned, not at an offset: an object
        deleted meanwhile does not make the next page skip one. Without a field selector the page is cut
        before rendering (labels are not rendered): a paged LIST of N objects copies and renders N objects,
        not N per page. A field selector may name rendered status (``status.phase``): everything is
        rendered. ``selector`` is the label selector's text; the objects it selects are remembered by the
        store until the type's next write (``peek_selected``), so the pages of one LIST select once."""
        labels = label_selector(selector)
        with self.request():
            if fields is not None:
                selected = self.list_objects(rtype, namespace, lambda o: labels(o) and fields(o))
            else:
                selected = self.store.peek_selected(rtype, namespace, selector, labels)
            start = 0 if after is None else bisect.bisect_right(selected, after, key=_object_key)
            end = len(selected) if size is None else min(start + size, len(selected))
            if fields is not None:
                page = selected[start:end]
            else:
                page = self._rendered(rtype, [self._copy_to_render(rtype, o) for o in selected[start:end]])
            return page, len(selected) - end, self.store.resource_version

    def _rendered(self, rtype: ResourceType, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Copies of stored objects with their server-owned status filled in (changed in place)."""
        if is_workload(rtype):
            return self.runtime.render_workloads(rtype, objects)
        return [self._render(rtype, o) for o in objects]

    def _existing(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rtype, namespace if rtype.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return obj

    def render(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """A copy of a stored object as a read shows it (server-owned status filled in), under ``request``."""
        return self._render(rtype, self._copy_to_render(rtype, obj))

    @staticmethod
    def _copy_to_render(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """What rendering may change of a stored object, copied: a workload's or a pod's render only sets its
        top-level ``status`` (a new dict: ``running_status`` copies the stored one before it changes it), and
        a watch event its ``metadata.resourceVersion``, which ``touch`` also sets in the stored dict; so
        their top level and metadata are copied and the rest is shared (as ``render_workloads`` copies the
        pods it renders); other kinds are copied whole. The copies are serialised at once and never kept (a
        LIST page, a watch event): a LIST of 10,000 Deployments or pods no longer deep-copies each one."""
        if is_workload(rtype) or is_pod(rtype):
            return {**obj, "metadata": dict(obj["metadata"])}
        return clone(obj)

    def _render(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if is_pod(rtype):
            return self.runtime.render_pod(obj)
        if is_workload(rtype):
            return self.runtime.render_workload(rtype, obj)
        return obj

    # --- writes ----------------------------------------------------------------------------------

    def create(self, rtype: ResourceType, namespace: str, body: Any, manager: str) -> dict[str, Any]:
        with self.request():
            obj = self._validated(rtype, namespace, body, None)
            if self.store.get(rtype, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]):
                raise errors.already_exists(rtype.plural, rtype.group, obj["metadata"]["name"])
            return self._render(rtype, self._create(rtype, obj, manager))

    def replace(
        self, rtype: ResourceType, namespace: str, name: str, body: Any, manager: str
    ) -> tuple[dict[str, Any], bool]:
        """PUT: replace, or create when absent. Returns (object, created)."""
        with self.request():
            obj = self._validated(rtype, namespace, body, name)
            old = self.store.get(rtype, obj["metadata"].get("namespace", ""), name)
            if old is None:
                obj["metadata"].pop("resourceVersion", None)
                return self._render(rtype, self._create(rtype, obj, manager)), True
            return self._render(rtype, self._update(rtype, old, obj, manager)), False

    def patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        manager: str,
        force: bool,
    ) -> tuple[dict[str, Any], bool]:
        """PATCH in any of the four patch types; apply creates the object when it is absent."""
        with self.request():
            ns = namespace if rtype.namespaced else ""
            old = self.store.get(rtype, ns, name)
            if content_type == APPLY:
                return self._apply(rtype, ns, name, old, body, manager, force)
            if old is None:
                raise errors.not_found(rtype.plural, rtype.group, name)
            patched = _patched(old, content_type, body, _keyed(rtype))
            obj = self._validated(rtype, namespace, patched, name)
            return self._render(rtype, self._update(rtype, old, obj, manager)), False

    def _apply(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        old: dict[str, Any] | None,
        body: Any,
        manager: str,
        force: bool,
    ) -> tuple[dict[str, Any], bool]:
        config = check_body(rtype, body, name)
        if rtype.namespaced:
            config["metadata"].setdefault("namespace", namespace)
        try:
            merged = server_side_apply(old, config, manager, force, _keyed(rtype), _now(self))
        except ApplyConflict as exc:
            raise errors.ApiError(409, "Conflict", exc.message, causes=exc.causes()) from exc
        obj = self._validated(rtype, namespace, merged, name)
        if old is None:
            return self._render(rtype, self._create(rtype, obj, None)), True
        if _same_apart_from_times(obj, old):
            return self._render(rtype, old), False
        obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._render(rtype, self._update(rtype, old, obj, None)), False

    def delete(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        with self.request():
            obj = self._render(rtype, self._existing(rtype, namespace, name))
            self._delete(rtype, obj)
            return obj

    def delete_collection(
        self, rtype: ResourceType, namespace: str | None, match: Predicate
    ) -> list[dict[str, Any]]:
        with self.request():
            doomed = self.list_objects(rtype, namespace, match)
            for obj in doomed:
                self._delete(rtype, obj)
            return doomed

    # --- subresources ----------------------------------------------------------------------------

    def write_status(
        self, rtype: ResourceType, namespace: str, name: str, content_type: str, body: Any
    ) -> dict[str, Any]:
        """PUT or PATCH ``.../status``: only ``status`` changes (ignored for server-owned status)."""
        with self.request():
            old = self._existing(rtype, namespace, name)
            new = body if content_type == "" else _patched(old, content_type, body, _keyed(rtype))
            if not isinstance(new, dict):
                raise errors.bad_request("the status body must be an object")
            obj = clone(old)
            if rtype.kind not in _SERVER_STATUS:
                obj["status"] = new.get("status")
            if obj != old:
                self.store.put(rtype, obj)
            return self._render(rtype, obj)

    def scale(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        with self.request():
            return scale_of(self._render(rtype, self._existing(rtype, namespace, name)))

    def write_scale(
        self, rtype: ResourceType, namespace: str, name: str, content_type: str, body: Any, manager: str
    ) -> dict[str, Any]:
        with self.request():
            old = self._existing(rtype, namespace, name)
            current = scale_of(self._render(rtype, clone(old)))
            new = body if content_type == "" else _patched(current, content_type, body, True)
            replicas = ((new or {}).get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid("Scale", "autoscaling", name, "spec.replicas", "must be an integer >= 0")
            obj = clone(old)
            obj.setdefault("spec", {})["replicas"] = replicas
            return scale_of(self._render(rtype, self._update(rtype, old, obj, manager)))

    # --- internals -------------------------------------------------------------------------------

    def _validated(self, rtype: ResourceType, namespace: str, body: Any, name: str | None) -> dict[str, Any]:
        obj = check_body(rtype, body, name)
        meta = obj["metadata"]
        if rtype.namespaced:
            if meta.setdefault("namespace", namespace) != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            if self.store.get(self._type("", "namespaces"), "", namespace) is None:
                raise errors.not_found("namespaces", "", namespace)
        else:
            meta.pop("namespace", None)
        check_workload(rtype, obj)
        return obj

    def _create(self, rtype: ResourceType, obj: dict[str, Any], manager: str | None) -> dict[str, Any]:
        obj["metadata"].pop("resourceVersion", None)
        for key in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
            obj["metadata"].pop(key, None)
        self.runtime.stamp(obj)
        if rtype.kind in _SERVER_STATUS:
            obj.pop("status", None)
        if rtype.kind == "Namespace" and rtype.group == "":
            obj["status"] = {"phase": "Active"}
        if manager is not None:
            obj["metadata"]["managedFields"] = record_update(None, obj, manager, _keyed(rtype), _now(self))
        stored = self.store.put(rtype, obj)
        self._after_write(rtype, stored, spec_changed=True)
        return stored

    def _update(
        self, rtype: ResourceType, old: dict[str, Any], new: dict[str, Any], manager: str | None
    ) -> dict[str, Any]:
        meta, old_meta = new["metadata"], old["metadata"]
        sent_rv = meta.get("resourceVersion")
        if sent_rv and sent_rv != old_meta["resourceVersion"]:
            raise errors.conflict(
                rtype.plural,
                rtype.group,
                meta["name"],
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        for key in ("uid", "creationTimestamp", "resourceVersion", "generation"):
            meta[key] = old_meta[key]
        if rtype.kind in _SERVER_STATUS or "status" in rtype.subresources:
            new["status"] = old.get("status")
        if new.get("status") is None:
            new.pop("status", None)
        spec_changed = _content(new) != _content(old)
        if spec_changed:
            meta["generation"] = old_meta["generation"] + 1
        if manager is not None:
            meta["managedFields"] = record_update(old, new, manager, _keyed(rtype), _now(self))
        if new == old:
            return old
        stored = self.store.put(rtype, new)
        self._after_write(rtype, stored, spec_changed)
        return stored

    def _after_write(self, rtype: ResourceType, obj: dict[str, Any], spec_changed: bool) -> None:
        if is_workload(rtype):
            if spec_changed:
                self.runtime.workload_changed(rtype, obj)
        elif is_pod(rtype):
            self.runtime.pod_created(obj)
        elif rtype.group == "" and rtype.kind == "Node":
            self.runtime.schedule()
        elif rtype.kind == "CustomResourceDefinition":
            register_crd(self.registry, obj)

    def _delete(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace", "") if rtype.namespaced else ""
        self.store.remove(rtype, namespace, meta["name"], obj)  # obj is rendered: a watch's DELETED
        if is_workload(rtype):
            self.runtime.delete_owned(rtype, obj)
        elif is_pod(rtype):
            self._pod_deleted(obj)
        elif rtype.group == "" and rtype.kind == "Namespace":
            self._purge_namespace(meta["name"])
        elif rtype.group == "" and rtype.kind == "Node":
            self.runtime.schedule()

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        """A deleted pod frees room, and its workload (if any) replaces it."""
        meta = pod["metadata"]
        self.runtime.bound_at.pop((meta.get("namespace", ""), meta["name"]), None)
        for ref in meta.get("ownerReferences") or []:
            rtype = self.registry.by_kind("apps", ref.get("kind", ""))
            owner = self.store.get(rtype, meta.get("namespace", ""), ref.get("name", "")) if rtype else None
            if owner is not None:
                self.runtime.reconcile(owner)
        self.runtime.schedule()

    def _purge_namespace(self, namespace: str) -> None:
        for rtype in self.registry.all():
            if rtype.namespaced:
                for obj in self._rendered(rtype, self.store.list_objects(rtype, namespace)):
                    self._delete(rtype, obj)


def _object_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def _now(cluster: SimCluster) -> str:
    return rfc3339(cluster.clock())


def _same_apart_from_times(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """True when an apply changed neither content nor ownership (only managedFields times differ)."""

    def strip(obj: dict[str, Any]) -> dict[str, Any]:
        out = clone(obj)
        meta = out.setdefault("metadata", {})
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation"):
            meta.pop(key, None)
        for entry in meta.get("managedFields") or []:
            entry.pop("time", None)
        if "status" not in new:
            out.pop("status", None)
        return out

    return strip(new) == strip(old)


def _keyed(rtype: ResourceType) -> bool:
    """Built-in kinds merge keyed lists; custom kinds treat every list as atomic."""
    return rtype.group in patching.BUILTIN_GROUPS


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _patched(old: dict[str, Any], content_type: str, body: Any, keyed: bool) -> Any:
    if content_type not in patching.PATCH_TYPES or content_type == APPLY:
        raise errors.unsupported_media(content_type)
    if content_type == patching.STRATEGIC and not keyed:
        raise errors.unsupported_media(
            content_type
        )  # kube-apiserver: custom resources take no strategic patch
    try:
        return patching.patched(old, content_type, body, keyed)
    except PatchError as exc:
        raise errors.ApiError(exc.code, exc.reason, exc.message) from exc
