"""Joining and unjoining member clusters.

Routes (admin only, Kubernetes ``Status`` errors):

    POST   /federation/v1/clusters/join     {name, kubeconfig, context?, syncMode: Push|Pull,
                                             region?, zone?, provider?, labels?}  → 201 + the Cluster
    DELETE /federation/v1/clusters/{name}[?force=true]                            → 200 + Status

Invariants:
- Nothing is written before the join is known to be good: the request is parsed, the Cluster it would
  create is validated (422 naming each field), the name is checked (409), and a Push member is probed
  through the kubeconfig (probe ok, version, apiEnablements, resources). Any failure is one clear error and
  leaves no record. The Cluster and its encrypted kubeconfig are then written in one transaction.
- Credentials never appear in an answer (the Cluster body does not carry them), and the server never reads
  files a kubeconfig names: it must be self-contained (the CLI inlines file references before sending).
- Pull clusters are not probed and need no credentials: their agent connects out.
- A region or zone also sets the well-known ``topology.kubernetes.io/region``/``zone`` labels (so a
  labelSelector or a WorkloadPolicy topologyKey can use them); an explicit label of the same key wins.
- Unjoin is refused (409, naming the bindings) while bindings still target the cluster, unless forced.
  For a Push cluster the Works' objects are deleted from the member first; when that fails and the unjoin
  is not forced, nothing is deleted (503) so it can be retried. Then the Works and the Cluster go in one
  transaction (deleting a Cluster re-queues the bindings that targeted it, see ``store.dependents``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from federation.api.auth import authorize
from federation.api.bodies import read_json
from federation.api.context import ApiContext, authenticate
from federation.api.kubeconfigs import shape_errors
from federation.api.paths import ObjectPath
from federation.api.status import StatusError, already_exists, bad_request, invalid, not_found, success
from federation.members.client import KubernetesMemberClient
from federation.members.errors import MemberError
from federation.members.health import MESSAGE_READY, REASON_READY
from federation.members.kubeconfig import Kubeconfig, load_kubeconfig
from federation.members.summary import ClusterSummary
from federation.model import kinds
from federation.model.validation import validate_object
from federation.settings import MemberSettings
from federation.store.bindings import BindingRepository
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox
from federation.store.db import UnitOfWork
from federation.store.errors import AlreadyExists, NotFound
from federation.store.manifest import format_timestamp
from federation.store.works import WorkRepository

JOIN_PATH = "/federation/v1/clusters/join"
UNJOIN_PATH = "/federation/v1/clusters/{name}"
CLUSTER_API_VERSION = "cluster.karmada.io/v1alpha1"
SYNC_MODES = ("Push", "Pull")
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
# kubeconfig keys that name files on the machine that reads them (the server must not read its own files).
_FILE_KEYS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}
_CLUSTER_PATH = ObjectPath("cluster.karmada.io", "v1alpha1", "clusters", None, None, None)


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """What a join asks for; ``kubeconfig`` may be omitted for Pull clusters."""

    name: str
    kubeconfig: dict[str, Any] | None = None
    context: str | None = None
    sync_mode: str = "Push"
    region: str | None = None
    zone: str | None = None
    provider: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_body(cls, body: Any) -> JoinRequest:
        if not isinstance(body, dict):
            raise bad_request("the join request must be a JSON object")
        name = _optional_str(body, "name") or ""
        strings = {key: _optional_str(body, key) for key in ("context", "region", "zone", "provider")}
        kubeconfig = body.get("kubeconfig")
        if kubeconfig is not None and not isinstance(kubeconfig, dict):
            raise bad_request("kubeconfig must be a kubeconfig object (the parsed YAML), not a string")
        if kubeconfig is not None:
            _check_kubeconfig_shape(kubeconfig, name)
        labels = body.get("labels") or {}
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise bad_request("labels must be an object of string to string")
        return cls(
            name=name,
            kubeconfig=kubeconfig,
            sync_mode=_optional_str(body, "syncMode") or "Push",
            labels=dict(labels),
            **strings,
        )


def _check_kubeconfig_shape(kubeconfig: dict[str, Any], name: str) -> None:
    """422 Invalid naming every kubeconfig field of the wrong type (nothing reads the kubeconfig before)."""
    errors = shape_errors(kubeconfig)
    if errors:
        causes = [{"field": e.field, "message": e.message, "reason": e.reason} for e in errors]
        raise invalid("Cluster", name, causes)


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_request(f"{key} must be a string")
    return value or None


@dataclass(frozen=True, slots=True)
class MemberFacts:
    """What the join probe learned about a Push member."""

    version: str
    enablements: list[dict[str, Any]]
    summary: ClusterSummary


# -- join --------------------------------------------------------------------------------------------


def join_cluster(
    uow: UnitOfWork,
    box: SecretBox,
    settings: MemberSettings,
    request: JoinRequest,
    *,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Join a member cluster in-process (what the route does); returns the created Cluster.

    Raises ``StatusError`` for every refusal; nothing is stored then.
    """
    config = resolve_kubeconfig(request)
    manifest = cluster_manifest(request, config)
    validate_cluster(manifest)
    with uow() as session:
        if ClusterRepository(session).get(request.name) is not None:
            raise already_exists("clusters.cluster.karmada.io", request.name)
    if config is not None and request.sync_mode == "Push":
        facts = probe_member(request.name, config, settings)
        manifest["status"] = initial_status(facts, now or datetime.now(UTC))
    return _create(uow, box, manifest, config if request.sync_mode == "Push" else None)


def resolve_kubeconfig(request: JoinRequest) -> Kubeconfig | None:
    """The kubeconfig's chosen context, resolved; 400 naming the problem when it cannot be used."""
    if request.sync_mode not in SYNC_MODES:
        raise bad_field("syncMode", f"must be Push or Pull, got {request.sync_mode!r}")
    if request.kubeconfig is None:
        if request.sync_mode == "Push":
            raise bad_field("kubeconfig", "a Push cluster needs a kubeconfig the server can reach it with")
        return None
    references = list(_file_references(request.kubeconfig))
    if references:
        raise bad_field(
            "kubeconfig",
            f"must be self-contained, but it names files ({', '.join(references)}); inline them as "
            "*-data fields (federation join does this for you)",
        )
    try:
        return load_kubeconfig(request.kubeconfig, request.context, cluster=request.name)
    except MemberError as err:
        raise bad_field("kubeconfig", err.reason) from err


def _file_references(kubeconfig: dict[str, Any]) -> Iterator[str]:
    for section, keys in _FILE_KEYS.items():
        inner = section[:-1]  # clusters[].cluster, users[].user
        for entry in kubeconfig.get(section) or []:
            body = entry.get(inner) if isinstance(entry, dict) else None
            for key in keys:
                if isinstance(body, dict) and body.get(key):
                    yield f"{section}[{entry.get('name')}].{key}"


def bad_field(name: str, message: str) -> StatusError:
    error = bad_request(f"{name}: {message}")
    error.causes = [{"field": name, "message": message, "reason": "FieldValueInvalid"}]
    return error


def cluster_manifest(request: JoinRequest, config: Kubeconfig | None) -> dict[str, Any]:
    """The Cluster a join creates (without status)."""
    spec: dict[str, Any] = {"syncMode": request.sync_mode}
    if config is not None:
        spec["apiEndpoint"] = config.server
        if config.insecure:
            spec["insecureSkipTLSVerification"] = True
    optional = {"provider": request.provider, "region": request.region, "zone": request.zone}
    spec.update({key: value for key, value in optional.items() if value})
    metadata: dict[str, Any] = {"name": request.name}
    labels = requested_labels(request)
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": CLUSTER_API_VERSION, "kind": "Cluster", "metadata": metadata, "spec": spec}


def requested_labels(request: JoinRequest) -> dict[str, str]:
    """The topology labels of the request's region and zone, then its own labels (which win)."""
    topology = {REGION_LABEL: request.region, ZONE_LABEL: request.zone}
    return {**{key: value for key, value in topology.items() if value}, **request.labels}


def validate_cluster(manifest: dict[str, Any]) -> None:
    info = kinds.by_path("cluster.karmada.io", "v1alpha1", "clusters")
    errors = validate_object(manifest, info)
    if errors:
        causes = [{"field": e.field, "message": e.message, "reason": e.reason} for e in errors]
        raise invalid("Cluster", str(manifest["metadata"].get("name", "")), causes)


def probe_member(name: str, config: Kubeconfig, settings: MemberSettings) -> MemberFacts:
    """Probe a Push member through its kubeconfig; ``StatusError`` when it cannot be joined."""
    client = _member_client(name, config.minimal, settings)
    try:
        result = client.probe()
        if not result.ok:
            raise _probe_failure(name, config.server, result.online, result.status_code, result.error)
        return MemberFacts(client.version(), client.api_enablements(), client.resource_summary())
    except MemberError as err:
        raise _member_failure(err) from err
    finally:
        client.close()


def _member_client(name: str, kubeconfig: dict[str, Any], settings: MemberSettings) -> KubernetesMemberClient:
    try:
        return KubernetesMemberClient(
            name,
            kubeconfig,
            timeout=settings.request_timeout_seconds,
            connect_timeout=settings.probe_timeout_seconds,
        )
    except MemberError as err:
        raise _member_failure(err) from err


def _probe_failure(name: str, server: str, online: bool, code: int | None, error: str | None) -> StatusError:
    if not online:
        return StatusError(
            503, "ServiceUnavailable", f'cluster "{name}" is not reachable at {server}: {error}'
        )
    if code in (401, 403):
        return bad_field("kubeconfig", f"the member at {server} refused its credentials ({error})")
    return StatusError(
        503, "ServiceUnavailable", f'cluster "{name}" at {server} is reachable but not healthy: {error}'
    )


def _member_failure(err: MemberError) -> StatusError:
    if err.kind in ("kubeconfig", "unauthorized", "forbidden"):
        return bad_field("kubeconfig", err.reason)
    if err.kind == "timeout":
        return StatusError(504, "Timeout", f'cluster "{err.cluster}": {err.reason}')
    return StatusError(503, "ServiceUnavailable", f'cluster "{err.cluster}": {err.reason}')


def initial_status(facts: MemberFacts, now: datetime) -> dict[str, Any]:
    """What the join probe saw, in Karmada's status shape (the status controller keeps it current)."""
    stamp = format_timestamp(now)
    ready = {"type": "Ready", "status": "True", "reason": REASON_READY, "message": MESSAGE_READY}
    complete = {"type": "CompleteAPIEnablements", "status": "True", "reason": "Complete"}
    complete["message"] = "collected complete APIs from member cluster"
    return {
        "kubernetesVersion": facts.version,
        "apiEnablements": facts.enablements,
        "conditions": [{**ready, "lastTransitionTime": stamp}, {**complete, "lastTransitionTime": stamp}],
        "nodeSummary": facts.summary.node_summary,
        "resourceSummary": facts.summary.resource_summary,
    }


def _create(
    uow: UnitOfWork, box: SecretBox, manifest: dict[str, Any], config: Kubeconfig | None
) -> dict[str, Any]:
    name = manifest["metadata"]["name"]
    try:
        with uow() as session:
            clusters = ClusterRepository(session)
            created = clusters.objects.create(manifest)
            if config is not None:
                clusters.set_kubeconfig(name, config.minimal, box)
    except AlreadyExists as exc:  # lost a race with a concurrent join of the same name
        raise already_exists("clusters.cluster.karmada.io", name) from exc
    return created


# -- unjoin ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cleanup:
    """What unjoin did on the member: objects deleted, and objects left behind (forced, member down)."""

    deleted: int = 0
    left: int = 0
    problem: str | None = None


def unjoin_cluster(
    uow: UnitOfWork, box: SecretBox, settings: MemberSettings, name: str, *, force: bool = False
) -> dict[str, Any]:
    """Unjoin in-process (what the route does); returns a success ``Status`` with a message."""
    with uow() as session:
        cluster = ClusterRepository(session).get(name)
        if cluster is None:
            raise not_found("clusters.cluster.karmada.io", name)
        bindings = BindingRepository(session).bindings_on_cluster(name)
        works = WorkRepository(session).on_cluster(name)
        push = (cluster.get("spec") or {}).get("syncMode") != "Pull"
        kubeconfig = ClusterRepository(session).kubeconfig(name, box) if push else None
    if bindings and not force:
        raise _still_targeted(name, bindings)
    cleanup = _delete_from_member(name, kubeconfig, works, settings, force=force)
    with uow() as session:
        _delete_records(session, name)
    body = success("clusters", name)
    body["message"] = _unjoin_message(name, cleanup)
    return body


def _still_targeted(name: str, bindings: list[dict[str, Any]]) -> StatusError:
    names = [_binding_label(b) for b in bindings]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    message = (
        f'cluster "{name}" is still targeted by {len(names)} binding(s): {shown}; move them away '
        "(policy or taint) or unjoin with force=true (federation unjoin --force)"
    )
    return StatusError(409, "Conflict", message, kind="clusters", name=name)


def _binding_label(binding: dict[str, Any]) -> str:
    meta = binding["metadata"]
    if meta.get("namespace"):
        return f"ResourceBinding {meta['namespace']}/{meta['name']}"
    return f"ClusterResourceBinding {meta['name']}"


def _member_objects(works: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The member objects unjoin removes (a Work with preserveResourcesOnDeletion keeps its objects)."""
    objects: list[dict[str, Any]] = []
    for work in works:
        spec = work.get("spec") or {}
        if not spec.get("preserveResourcesOnDeletion"):
            objects += [m for m in (spec.get("workload") or {}).get("manifests") or [] if isinstance(m, dict)]
    return objects


def _delete_from_member(
    name: str,
    kubeconfig: dict[str, Any] | None,
    works: list[dict[str, Any]],
    settings: MemberSettings,
    *,
    force: bool,
) -> Cleanup:
    objects = _member_objects(works)
    if not objects or kubeconfig is None:
        return Cleanup()
    try:
        client = _member_client(name, kubeconfig, settings)
    except StatusError as err:
        return _cleanup_failed(name, len(objects), 0, err.message, force)
    try:
        return _delete_objects(client, objects, force)
    finally:
        client.close()


def _delete_objects(client: KubernetesMemberClient, objects: list[dict[str, Any]], force: bool) -> Cleanup:
    probe = client.probe()  # one quick check instead of one timeout per object on a dead member
    if not probe.ok:
        return _cleanup_failed(client.name, len(objects), 0, probe.error or "not healthy", force)
    for done, manifest in enumerate(objects):
        meta = manifest.get("metadata") or {}
        try:
            client.delete(manifest["apiVersion"], manifest["kind"], meta.get("namespace"), meta["name"])
        except MemberError as err:
            return _cleanup_failed(client.name, len(objects) - done, done, err.reason, force)
    return Cleanup(deleted=len(objects))


def _cleanup_failed(name: str, left: int, deleted: int, reason: str, force: bool) -> Cleanup:
    if not force:
        message = (
            f'cannot delete the {left} remaining object(s) of cluster "{name}" from the member: {reason}; '
            "nothing was unjoined. Retry when the member is reachable, or unjoin with force=true to leave "
            "them behind"
        )
        raise StatusError(503, "ServiceUnavailable", message, kind="clusters", name=name)
    return Cleanup(deleted=deleted, left=left, problem=reason)


def _delete_records(session: Any, name: str) -> None:
    works = WorkRepository(session)
    for work in works.on_cluster(name):  # re-read: Works may have appeared since the first look
        meta = work["metadata"]
        works.objects.delete(meta["namespace"], meta["name"])
    try:
        ClusterRepository(session).objects.delete("", name)
    except NotFound as exc:  # a concurrent unjoin won
        raise not_found("clusters.cluster.karmada.io", name) from exc


def _unjoin_message(name: str, cleanup: Cleanup) -> str:
    message = f"cluster/{name} unjoined"
    if cleanup.deleted:
        message += f"; {cleanup.deleted} object(s) deleted from the member"
    if cleanup.left:
        message += f"; {cleanup.left} object(s) left on the member ({cleanup.problem})"
    return message


# -- routes ------------------------------------------------------------------------------------------


def register(app: FastAPI, ctx: ApiContext) -> None:
    """Add the join/unjoin routes."""

    @app.post(JOIN_PATH, status_code=201, summary="Join a member cluster (probes it first)")
    async def join(request: Request) -> JSONResponse:
        authorize(authenticate(ctx, request), "POST", _CLUSTER_PATH)
        parsed = JoinRequest.from_body(await read_json(request))
        created = await run_in_threadpool(join_cluster, ctx.uow, ctx.secret_box, ctx.settings.members, parsed)
        ctx.notify("Cluster")
        return JSONResponse(created, status_code=201)

    @app.delete(UNJOIN_PATH, summary="Unjoin a member cluster (refused while bindings target it)")
    async def unjoin(request: Request, name: str, force: bool = False) -> JSONResponse:
        target = ObjectPath("cluster.karmada.io", "v1alpha1", "clusters", None, name, None)
        authorize(authenticate(ctx, request), "DELETE", target)
        call = partial(unjoin_cluster, ctx.uow, ctx.secret_box, ctx.settings.members, name, force=force)
        result = await run_in_threadpool(call)
        ctx.notify("Cluster")
        return JSONResponse(result)
