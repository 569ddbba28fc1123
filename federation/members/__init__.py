"""Member clusters: per-cluster clients, health probes and debouncing, and the simulator (``sim``).

Public API: ``MemberClient`` / ``KubernetesMemberClient`` (client), ``MemberClientPool`` and
``run_concurrently`` (pool), ``load_kubeconfig`` (kubeconfig), ``ReadyDebouncer`` and friends (health),
``MemberError``. Imports only ``federation.model`` from the rest of the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from federation.members.client import KubernetesMemberClient, MemberClient
    from federation.members.errors import KubeconfigError, MemberError
    from federation.members.kubeconfig import Kubeconfig, credentials_hash, load_kubeconfig
    from federation.members.pool import MemberClientPool, Outcome, run_concurrently
    from federation.members.probe import ProbeResult
    from federation.members.summary import ClusterSummary

# Name -> submodule. Loaded on first use (PEP 562): a CLI verb that reads a kubeconfig (join) must not pay
# for the Kubernetes client, which ``client`` imports.
_SUBMODULES = {
    "ClusterSummary": "summary",
    "KubeconfigError": "errors",
    "Kubeconfig": "kubeconfig",
    "KubernetesMemberClient": "client",
    "MemberClient": "client",
    "MemberClientPool": "pool",
    "MemberError": "errors",
    "Outcome": "pool",
    "ProbeResult": "probe",
    "credentials_hash": "kubeconfig",
    "load_kubeconfig": "kubeconfig",
    "run_concurrently": "pool",
}


def __getattr__(name: str) -> Any:
    if name not in _SUBMODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_SUBMODULES[name]}"), name)


__all__ = [
    "ClusterSummary",
    "KubeconfigError",
    "Kubeconfig",
    "KubernetesMemberClient",
    "MemberClient",
    "MemberClientPool",
    "MemberError",
    "Outcome",
    "ProbeResult",
    "credentials_hash",
    "load_kubeconfig",
    "run_concurrently",
]
