"""From a cluster name to a live client: read the member's encrypted kubeconfig, decrypt it, and reuse
a cached client while the credentials stay the same.

Invariants: credentials are decrypted in memory only, never logged; a cluster with no stored
credentials (a Pull-mode cluster) has no client and says so with `MemberError`.
"""

from __future__ import annotations

from typing import Any

from federation.members.client import KubernetesMemberClient, MemberClient
from federation.members.errors import MemberError
from federation.members.pool import MemberClientPool
from federation.settings import MemberSettings
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox
from federation.store.db import UnitOfWork


class MemberAccess:
    def __init__(self, uow: UnitOfWork, box: SecretBox, settings: MemberSettings) -> None:
        self._uow = uow
        self._box = box
        self.settings = settings
        self.pool = MemberClientPool(self._build)

    def _build(self, name: str, kubeconfig: dict[str, Any]) -> MemberClient:
        return KubernetesMemberClient(
            name,
            kubeconfig,
            timeout=self.settings.request_timeout_seconds,
            connect_timeout=self.settings.probe_timeout_seconds,
        )

    def kubeconfig(self, cluster: str) -> dict[str, Any]:
        with self._uow() as session:
            stored = ClusterRepository(session).kubeconfig(cluster, self._box)
        if stored is None:
            raise MemberError(
                cluster, "no credentials are stored for this cluster (Pull mode?)", kind="kubeconfig"
            )
        return stored

    def client(self, cluster: str) -> MemberClient:
        return self.pool.get(cluster, self.kubeconfig(cluster))

    def forget(self, cluster: str) -> None:
        self.pool.evict(cluster)

    def close(self) -> None:
        self.pool.close()
