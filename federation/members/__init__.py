"""Member clusters: per-cluster clients, health probes and debouncing, and the simulator (``sim``).

Public API: ``MemberClient`` / ``KubernetesMemberClient`` (client), ``MemberClientPool`` and
``run_concurrently`` (pool), ``load_kubeconfig`` (kubeconfig), ``ReadyDebouncer`` and friends (health),
``MemberError``. Imports only ``federation.model`` from the rest of the package.
"""

from federation.members.client import KubernetesMemberClient, MemberClient
from federation.members.errors import KubeconfigError, MemberError
from federation.members.kubeconfig import Kubeconfig, credentials_hash, load_kubeconfig
from federation.members.pool import MemberClientPool, Outcome, run_concurrently
from federation.members.probe import ProbeResult
from federation.members.summary import ClusterSummary

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
