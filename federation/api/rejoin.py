"""Re-joining a cluster: new credentials (and endpoint) for a joined Push cluster, without unjoining it.

Route (admin only, Kubernetes ``Status`` errors):

    POST /federation/v1/clusters/{name}/rejoin   {kubeconfig, context?, region?, zone?, provider?,
                                                  labels?} (the join body; a name, if any, the path's)
                                                  → 200 + the Cluster

Why: a rotated token or a re-issued member CA (the Ready condition says ``x509: certificate signed by
unknown authority``) must not cost an unjoin, which deletes the member's objects and every placement.

Invariants:
- The join's checks run first (self-contained kubeconfig, a probe through the new credentials); any
  failure leaves the cluster exactly as it was.
- One transaction then sets ``spec.apiEndpoint`` (and ``insecureSkipTLSVerification``) from the kubeconfig,
  the region/zone/provider given (with their topology labels) and the labels given, keeps every other field
  (taints, other labels), stores the new credentials encrypted, takes the probe's status and marks the
  cluster's Works for sync (a restarted member may have lost them; applying again is idempotent).
- Only Push clusters have credentials here: a Pull cluster's agent holds its own (400).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from federation.api.auth import authorize
from federation.api.bodies import read_json
from federation.api.context import ApiContext, authenticate
from federation.api.join import (
    JoinRequest,
    MemberFacts,
    bad_field,
    initial_status,
    probe_member,
    requested_labels,
    resolve_kubeconfig,
    validate_cluster,
)
from federation.api.paths import ObjectPath
from federation.api.status import not_found
from federation.members.kubeconfig import Kubeconfig
from federation.settings import MemberSettings
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox
from federation.store.db import UnitOfWork
from federation.store.errors import Conflict
from federation.store.works import WorkRepository

REJOIN_PATH = "/federation/v1/clusters/{name}/rejoin"
RESOURCE = "clusters.cluster.karmada.io"
WRITE_ATTEMPTS = 5


def rejoin_cluster(
    uow: UnitOfWork,
    box: SecretBox,
    settings: MemberSettings,
    request: JoinRequest,
    *,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Re-point the Push cluster ``request.name`` at ``request.kubeconfig`` (module doc); the Cluster."""
    with uow() as session:
        current = ClusterRepository(session).get(request.name)
    if current is None:
        raise not_found(RESOURCE, request.name)
    if (current.get("spec") or {}).get("syncMode") == "Pull":
        raise bad_field(
            "syncMode", f'cluster "{request.name}" is in Pull mode: its agent holds its credentials'
        )
    config = resolve_kubeconfig(request)
    assert config is not None  # a Push request without a kubeconfig is refused by resolve_kubeconfig
    validate_cluster(updated_cluster(current, request, config))
    facts = probe_member(request.name, config, settings)
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            return _write(uow, box, request, config, facts, now)
        except Conflict:
            # The cluster status controller writes the same Cluster; the re-join is applied on top.
            if attempt == WRITE_ATTEMPTS:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def _write(
    uow: UnitOfWork,
    box: SecretBox,
    request: JoinRequest,
    config: Kubeconfig,
    facts: MemberFacts,
    now: datetime | None,
) -> dict[str, Any]:
    with uow() as session:
        clusters = ClusterRepository(session)
        cluster = clusters.get(request.name)
        if cluster is None:  # unjoined meanwhile
            raise not_found(RESOURCE, request.name)
        replaced = clusters.objects.replace(updated_cluster(cluster, request, config))
        status = {**(replaced.get("status") or {}), **initial_status(facts, now or datetime.now(UTC))}
        result = clusters.objects.update_status("", request.name, status)
        clusters.set_kubeconfig(request.name, config.minimal, box)
        works = WorkRepository(session)
        for work in works.on_cluster(request.name):
            works.mark_needs_sync(work["metadata"]["namespace"], work["metadata"]["name"])
    return result


def updated_cluster(cluster: dict[str, Any], request: JoinRequest, config: Kubeconfig) -> dict[str, Any]:
    """``cluster`` with the request's endpoint, TLS flag, topology and labels; everything else kept."""
    spec = {**(cluster.get("spec") or {}), "apiEndpoint": config.server}
    spec.pop("insecureSkipTLSVerification", None)
    if config.insecure:
        spec["insecureSkipTLSVerification"] = True
    optional = {"provider": request.provider, "region": request.region, "zone": request.zone}
    spec.update({key: value for key, value in optional.items() if value})
    metadata = dict(cluster["metadata"])
    metadata["labels"] = {**(metadata.get("labels") or {}), **requested_labels(request)}
    updated = {**cluster, "metadata": metadata, "spec": spec}
    updated.pop("status", None)
    return updated


def register(app: FastAPI, ctx: ApiContext) -> None:
    """Add the rejoin route."""

    @app.post(REJOIN_PATH, summary="Replace a joined cluster's credentials (probes them first)")
    async def rejoin(request: Request, name: str) -> JSONResponse:
        target = ObjectPath("cluster.karmada.io", "v1alpha1", "clusters", None, name, None)
        authorize(authenticate(ctx, request), "PUT", target)
        body = await read_json(request)
        if isinstance(body, dict) and body.get("name") not in (None, "", name):
            raise bad_field("name", f"the body names {body['name']!r}, the path {name!r}")
        parsed = JoinRequest.from_body({**body, "name": name} if isinstance(body, dict) else body)
        call = partial(rejoin_cluster, ctx.uow, ctx.secret_box, ctx.settings.members, parsed)
        result = await run_in_threadpool(call)
        ctx.notify("Cluster")
        ctx.notify("Work")
        return JSONResponse(result)
