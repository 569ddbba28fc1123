"""Member clusters: region queries, credentials (encrypted) and the Ready/taint state controllers set.

Invariant: credentials are written with a Core UPDATE, so storing or rotating them neither bumps the
Cluster's ``resourceVersion`` nor shows up anywhere in the object the API returns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, true, update
from sqlalchemy.orm import Session

from federation.store.crypto import SecretBox
from federation.store.errors import NotFound
from federation.store.kinds import CLUSTER_API_VERSION
from federation.store.manifest import format_timestamp, join
from federation.store.repository import Clock, ObjectRepository
from federation.store.tables import ClusterRow
from federation.store.types import utcnow

KIND = "Cluster"


class ClusterRepository:
    def __init__(self, session: Session, *, clock: Clock = utcnow) -> None:
        self.session = session
        self.objects = ObjectRepository(session, KIND, CLUSTER_API_VERSION, clock=clock)

    def get(self, name: str) -> dict[str, Any] | None:
        return self.objects.get("", name)

    def all(self) -> list[dict[str, Any]]:
        """Every cluster, by name (one query; a fleet is hundreds of rows, not millions)."""
        return self._where(true())

    def in_region(self, region: str) -> list[dict[str, Any]]:
        return self._where(ClusterRow.region == region)

    def ready(self) -> list[dict[str, Any]]:
        return self._where(ClusterRow.ready.is_(True))

    def names(self) -> list[str]:
        return list(self.session.scalars(select(ClusterRow.name).order_by(ClusterRow.name)))

    def _where(self, condition: Any) -> list[dict[str, Any]]:
        statement = select(ClusterRow).where(condition).order_by(ClusterRow.name)
        return [join(row) for row in self.session.scalars(statement)]

    def set_credentials(self, name: str, plaintext: bytes, box: SecretBox) -> None:
        statement = (
            update(ClusterRow).where(ClusterRow.name == name).values(credentials=box.encrypt(plaintext))
        )
        if self.session.execute(statement.execution_options(synchronize_session=False)).rowcount == 0:  # type: ignore[attr-defined]
            raise NotFound(KIND, "", name)

    def with_credentials(self) -> list[str]:
        """Names of the clusters that have stored credentials (joined in Push mode)."""
        statement = (
            select(ClusterRow.name).where(ClusterRow.credentials.is_not(None)).order_by(ClusterRow.name)
        )
        return list(self.session.scalars(statement))

    def encrypted_credentials(self, names: Sequence[str]) -> dict[str, bytes]:
        """Name → encrypted credentials for these clusters (one query; clusters without any are absent)."""
        if not names:
            return {}
        statement = select(ClusterRow.name, ClusterRow.credentials).where(
            ClusterRow.name.in_(list(names)), ClusterRow.credentials.is_not(None)
        )
        return {str(name): bytes(token or b"") for name, token in self.session.execute(statement)}

    def credentials(self, name: str, box: SecretBox) -> bytes | None:
        token = self.session.scalar(select(ClusterRow.credentials).where(ClusterRow.name == name))
        return None if token is None else box.decrypt(token)

    def set_kubeconfig(self, name: str, kubeconfig: dict[str, Any], box: SecretBox) -> None:
        """Store a member kubeconfig encrypted (the one encoding every reader of credentials uses)."""
        self.set_credentials(name, encode_kubeconfig(kubeconfig), box)

    def kubeconfig(self, name: str, box: SecretBox) -> dict[str, Any] | None:
        stored = self.credentials(name, box)
        if stored is None:
            return None
        decoded: dict[str, Any] = json.loads(stored)
        return decoded

    def set_taints(self, name: str, taints: list[dict[str, Any]]) -> dict[str, Any]:
        """Replace ``spec.taints`` (a spec change: bumps generation, like Karmada's controllers do)."""
        obj = self._require(name)
        obj.setdefault("spec", {})["taints"] = taints
        return self.objects.replace(obj)

    def set_ready(
        self, name: str, ready: bool | None, *, reason: str, message: str, now: datetime
    ) -> dict[str, Any]:
        """Upsert the Ready condition (``lastTransitionTime`` moves only when the status flips)."""
        obj = self._require(name)
        status = dict(obj.get("status") or {})
        status["conditions"] = _with_condition(status.get("conditions") or [], ready, reason, message, now)
        return self.objects.update_status("", name, status)

    def _require(self, name: str) -> dict[str, Any]:
        obj = self.get(name)
        if obj is None:
            raise NotFound(KIND, "", name)
        return obj


def encode_kubeconfig(kubeconfig: dict[str, Any]) -> bytes:
    """The plaintext a kubeconfig is stored as (before encryption): canonical JSON."""
    return json.dumps(kubeconfig, sort_keys=True).encode()


def _with_condition(
    conditions: list[dict[str, Any]], ready: bool | None, reason: str, message: str, now: datetime
) -> list[dict[str, Any]]:
    value = {True: "True", False: "False", None: "Unknown"}[ready]
    previous = next((c for c in conditions if c.get("type") == "Ready"), None)
    transition = format_timestamp(now)
    if previous is not None and previous.get("status") == value:
        transition = previous.get("lastTransitionTime") or transition
    condition = {
        "type": "Ready",
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }
    if previous is None:
        return [*conditions, condition]
    return [condition if c is previous else c for c in conditions]
