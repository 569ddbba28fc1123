"""From a cluster name to a live client: read the member's encrypted kubeconfig, decrypt it, and reuse
a cached client while the credentials stay the same.

Invariants: credentials are decrypted in memory only, never logged; a cluster with no stored
credentials (a Pull-mode cluster) has no client and says so with `MemberError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from federation.members.client import KubernetesMemberClient, MemberClient
from federation.members.errors import MemberError
from federation.members.pool import MemberClientPool
from federation.settings import MemberSettings
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox
from federation.store.db import UnitOfWork
from federation.store.errors import DecryptionError

NO_CREDENTIALS = "no credentials are stored for this cluster (Pull mode?)"


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

    def clients(self, clusters: Sequence[str]) -> dict[str, MemberClient | MemberError]:
        """A client (or why there is none) for each cluster, reading all their credentials in one query:
        controllers call this once per pass, never once per cluster."""
        with self._uow() as session:
            stored = ClusterRepository(session).encrypted_credentials(clusters)
        return {name: self._client(name, stored.get(name)) for name in clusters}

    def client(self, cluster: str) -> MemberClient:
        found = self.clients([cluster])[cluster]
        if isinstance(found, MemberError):
            raise found
        return found

    def _client(self, name: str, token: bytes | None) -> MemberClient | MemberError:
        if token is None:
            return MemberError(
                name, "no credentials are stored for this cluster (Pull mode?)", kind="kubeconfig"
            )
        try:
            kubeconfig: dict[str, Any] = json.loads(self._box.decrypt(token))
            return self.pool.get(name, kubeconfig)
        except DecryptionError as err:
            return MemberError(name, f"its stored credentials cannot be decrypted: {err}", kind="kubeconfig")
        except MemberError as err:
            return err

    def forget(self, cluster: str) -> None:
        self.pool.evict(cluster)

    def close(self) -> None:
        self.pool.close()
