"""The one exception type member-cluster code raises.

Invariant: every failure talking to a member (bad kubeconfig, unreachable, TLS, 401/403, timeout, an API
error) surfaces as ``MemberError`` naming the cluster and giving a one-line reason, so callers record it in
a condition or a CLI message without knowing which library failed.
"""

from __future__ import annotations


class MemberError(Exception):
    """A failed member-cluster operation. ``kind`` classifies it; ``status`` is the HTTP code if any."""

    def __init__(self, cluster: str, reason: str, *, kind: str = "error", status: int | None = None) -> None:
        self.cluster = cluster
        self.reason = " ".join(reason.split())  # one line, whatever the library put in it
        self.kind = kind
        self.status = status
        super().__init__(f"cluster {cluster!r}: {self.reason}")


class KubeconfigError(MemberError):
    """The kubeconfig cannot be used: unreadable, no such context, no server, no credentials."""

    def __init__(self, cluster: str, reason: str) -> None:
        super().__init__(cluster, reason, kind="kubeconfig")
