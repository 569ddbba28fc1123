"""The pull-mode agent's view of the federation API: the few calls an agent token allows, over httpx.

Invariants:
- Only what an agent of cluster C may do: read C's Cluster and write its status, list the Works of
  `karmada-es-C`, write their status and finalize the tombstoned ones, read and renew C's lease. Any
  other call would be 403 anyway.
- Every request has a timeout; a failure is an `AgentApiError` carrying the HTTP code (0 when the server
  could not be reached) and the Status body's reason and message, never a library exception.
- The transport can be swapped (`httpx.BaseTransport`) so tests run the agent against an in-process app.
"""

from __future__ import annotations

from typing import Any

import httpx

from federation.apiclient import ApiClient, ApiError
from federation.model.work import execution_namespace

CLUSTER_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters"
WORK_PREFIX = "/apis/work.karmada.io/v1alpha1/namespaces"
# Karmada keeps cluster leases in this namespace (`util.NamespaceClusterLease`).
LEASE_NAMESPACE = "karmada-cluster"
LEASE_PREFIX = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
PAGE_SIZE = 200

Body = dict[str, Any]


# A failed call to the federation API (`code` 0: not reached); the shared client's error.
AgentApiError = ApiError


class AgentApi:
    """Synchronous client for one cluster's agent endpoints."""

    def __init__(
        self,
        server: str,
        token: str,
        cluster: str,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        ca_pem: bytes | None = None,
        insecure: bool = False,
    ) -> None:
        self.cluster = cluster
        self.namespace = execution_namespace(cluster)
        self._api = ApiClient(
            server, token, timeout=timeout, transport=transport, ca_pem=ca_pem, insecure=insecure
        )

    def close(self) -> None:
        self._api.close()

    def request(
        self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        return self._api.request(method, path, body=body, params=params)

    # --- works ------------------------------------------------------------------------------------

    def works(self) -> list[Body]:
        """Every Work of this cluster's execution namespace (all pages, or an error: never a partial list)."""
        return list(self._api.pages(f"{WORK_PREFIX}/{self.namespace}/works", page_size=PAGE_SIZE))

    def put_work_status(self, work: Body, status: Body) -> Body:
        """Write a Work's status, guarded by the resourceVersion the agent read (409 if it moved)."""
        meta = work.get("metadata") or {}
        body = {
            "apiVersion": work.get("apiVersion", "work.karmada.io/v1alpha1"),
            "kind": "Work",
            "metadata": {"name": meta.get("name"), "namespace": self.namespace},
            "status": status,
        }
        if meta.get("resourceVersion"):
            body["metadata"]["resourceVersion"] = meta["resourceVersion"]
        path = f"{WORK_PREFIX}/{self.namespace}/works/{meta.get('name')}/status"
        result: Body = self.request("PUT", path, body=body)
        return result

    def finalize_work(self, work: Body) -> None:
        """Remove a tombstoned Work whose member objects are gone (409 if it changed since it was read)."""
        meta = work.get("metadata") or {}
        path = f"/federation/v1/clusters/{self.cluster}/works/{meta.get('name')}/finalize"
        self.request("POST", path, body={"resourceVersion": meta.get("resourceVersion")})

    # --- the cluster ------------------------------------------------------------------------------

    def get_cluster(self) -> Body:
        result: Body = self.request("GET", f"{CLUSTER_PATH}/{self.cluster}")
        return result

    def put_cluster_status(self, cluster: Body, status: Body) -> Body:
        meta = cluster.get("metadata") or {}
        body = {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": self.cluster, "resourceVersion": meta.get("resourceVersion")},
            "status": status,
        }
        result: Body = self.request("PUT", f"{CLUSTER_PATH}/{self.cluster}/status", body=body)
        return result

    # --- the lease --------------------------------------------------------------------------------

    def renew_lease(self, holder: str, duration_seconds: int) -> Body:
        """Renew the cluster's heartbeat lease; the server stamps the renew time with its own clock."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.cluster, "namespace": LEASE_NAMESPACE},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration_seconds},
        }
        result: Body = self.request("PUT", f"{LEASE_PREFIX}/{self.cluster}", body=body)
        return result

    def get_lease(self) -> Body:
        result: Body = self.request("GET", f"{LEASE_PREFIX}/{self.cluster}")
        return result
