"""What a pull-mode agent needs beyond the generic object routes.

- `GET`/`PUT /apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases/{C}`: the cluster's heartbeat
  (Karmada's agent renews a Lease named after its cluster in `karmada-cluster`). Leases are rows of the
  `leases` table, not stored objects, so these routes stand in front of the generic object routes; Leases
  in any other namespace stay ordinary objects.
- `POST /federation/v1/clusters/{C}/works/{name}/finalize {resourceVersion}`: remove a tombstoned Work
  (`metadata.deletionTimestamp`, set by the execution controller) once the agent has deleted its member
  objects — what work sync does for Push clusters. Refused (409) when the Work is not tombstoned or has
  changed since the agent read it (the execution controller may have revived it), so a live Work is
  never removed.

Invariants:
- Same authentication and authorization as the object paths: an agent may touch only the lease named
  after its own cluster, and finalize only Works whose status it may write (its execution namespace);
  admins may do both for any cluster.
- The renew time is the server's clock, never the body's: staleness is judged on one clock.
- A lease can only be renewed for a cluster that exists (404 otherwise), so an unjoined cluster's
  agent cannot keep a ghost alive. Renewals do not wake controllers: they read leases on their own beat.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool

from federation.api.auth import LEASE_NAMESPACE, authorize
from federation.api.context import ApiContext, authenticate
from federation.api.paths import ObjectPath
from federation.api.status import StatusError, bad_request, conflict, not_found, success
from federation.model.work import execution_namespace
from federation.store.errors import Conflict
from federation.store.leases import CLUSTER, Lease, LeaseRepository
from federation.store.works import WorkRepository

FINALIZE_PATH = "/federation/v1/clusters/{cluster}/works/{name}/finalize"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{{name}}"
MAX_DURATION_SECONDS = 3600


def register(app: FastAPI, ctx: ApiContext) -> None:
    @app.get(LEASE_PATH, summary="Read a member cluster's heartbeat lease")
    async def get_lease(request: Request, name: str) -> dict[str, Any]:
        _allow(ctx, request, name)
        return await run_in_threadpool(_read, ctx, name)

    @app.put(LEASE_PATH, summary="Renew a member cluster's heartbeat lease (pull-mode agents)")
    async def put_lease(request: Request, name: str) -> dict[str, Any]:
        _allow(ctx, request, name)
        body = _json(await request.body())
        holder, duration = _renewal(body, name, ctx.settings.controllers.lease_duration_seconds)
        return await run_in_threadpool(_renew, ctx, name, holder, duration)

    @app.post(FINALIZE_PATH, summary="Remove a tombstoned Work whose member objects are gone (agents)")
    async def finalize_work(request: Request, cluster: str, name: str) -> dict[str, Any]:
        namespace = execution_namespace(cluster)
        principal = authenticate(ctx, request)
        target = ObjectPath("work.karmada.io", "v1alpha1", "works", namespace, name, "status")
        authorize(principal, "PUT", target)  # finalizing is part of the Work's status lifecycle
        body = _json(await request.body()) or {}
        expected = body.get("resourceVersion") if isinstance(body, dict) else None
        result = await run_in_threadpool(_finalize, ctx, namespace, name, expected)
        ctx.notify("Work")
        return result


def _finalize(ctx: ApiContext, namespace: str, name: str, expected: Any) -> dict[str, Any]:
    with ctx.uow() as session:
        works = WorkRepository(session).objects
        work = works.get(namespace, name)
        if work is None:
            raise not_found("works.work.karmada.io", name)
        if not (work.get("metadata") or {}).get("deletionTimestamp"):
            raise StatusError(409, "Conflict", f'work "{name}" is not being deleted', "works", name)
        try:
            works.delete(namespace, name, expected_rv=None if expected is None else str(expected))
        except Conflict as exc:
            raise conflict("works.work.karmada.io", name) from exc
    return success("works", name)


def _allow(ctx: ApiContext, request: Request, name: str) -> None:
    principal = authenticate(ctx, request)
    target = ObjectPath("coordination.k8s.io", "v1", "leases", LEASE_NAMESPACE, name, None)
    authorize(principal, request.method, target)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from exc


def _renewal(body: Any, name: str, default_duration: float) -> tuple[str, int]:
    """(holder, duration) from a Lease body; the holder defaults to the cluster's name."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a Lease object")
    if (body.get("metadata") or {}).get("name") not in (None, name):
        raise bad_request(f"the name of the object does not match the name on the URL ({name})")
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise bad_request("spec must be an object")
    duration = spec.get("leaseDurationSeconds", int(default_duration))
    in_range = isinstance(duration, int) and not isinstance(duration, bool) and duration > 0
    if not in_range or duration > MAX_DURATION_SECONDS:
        raise bad_request(f"spec.leaseDurationSeconds must be an integer in 1..{MAX_DURATION_SECONDS}")
    holder = spec.get("holderIdentity") or name
    if not isinstance(holder, str):
        raise bad_request("spec.holderIdentity must be a string")
    return holder, duration


def _renew(ctx: ApiContext, name: str, holder: str, duration: int) -> dict[str, Any]:
    with ctx.uow() as session:
        lease = LeaseRepository(session).renew_registered_cluster_lease(
            name, holder, datetime.now(UTC), duration
        )
        if lease is None:
            raise not_found("clusters.cluster.karmada.io", name)
        return lease_object(lease)


def _read(ctx: ApiContext, name: str) -> dict[str, Any]:
    with ctx.uow() as session:
        lease = LeaseRepository(session).get(CLUSTER, name)
    if lease is None:
        raise not_found("leases.coordination.k8s.io", name)
    return lease_object(lease)


def lease_object(lease: Lease) -> dict[str, Any]:
    """A `coordination.k8s.io/v1` Lease rendering of a cluster lease row."""
    spec: dict[str, Any] = {
        "leaseDurationSeconds": lease.duration_seconds,
        "leaseTransitions": lease.transitions,
    }
    if lease.holder is not None:
        spec["holderIdentity"] = lease.holder
    if lease.acquired_at is not None:
        spec["acquireTime"] = _micro_time(lease.acquired_at)
    if lease.renew_time is not None:
        spec["renewTime"] = _micro_time(lease.renew_time)
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": lease.name, "namespace": LEASE_NAMESPACE},
        "spec": spec,
    }


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
