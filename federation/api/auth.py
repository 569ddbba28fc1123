"""Who may do what. Authentication is a Bearer token looked up by its hash; authorization is pure.

Roles:
- admin: everything.
- viewer: reads only (GET), like a read-only ClusterRole without `secrets`: reading or listing Secrets is
  403, as is any write.
- agent: bound to one cluster C. It may read its Cluster object and write (PUT or PATCH) its status,
  read and list the Works in its execution namespace `karmada-es-C`, write those Works' status, and read
  and renew C's Lease in `karmada-cluster` (Karmada's agent's lease; a Lease named C anywhere else is not
  its own).
  Anything else, in particular anything about another cluster, is 403.

Authentication (who is calling) is the caller's: an unknown, expired or revoked token never gets here.
"""

from __future__ import annotations

from dataclasses import dataclass

from federation.api.paths import ObjectPath
from federation.api.status import StatusError, forbidden

EXECUTION_NAMESPACE_PREFIX = "karmada-es-"
LEASE_NAMESPACE = "karmada-cluster"
READ_METHODS = frozenset({"GET", "HEAD"})
STATUS_WRITES = frozenset({"PUT", "PATCH"})


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    role: str  # admin | viewer | agent
    cluster: str | None = None


def authorize(principal: Principal, method: str, target: ObjectPath | None) -> None:
    """Raise 403 unless `principal` may call `method` on `target` (None: discovery and the like)."""
    if principal.role == "admin":
        return
    if principal.role == "viewer":
        if method not in READ_METHODS or _is_secret(target):
            raise _denied(principal, method, target)
        return
    if principal.role == "agent" and _agent_may(principal.cluster or "", method, target):
        return
    raise _denied(principal, method, target)


def _agent_may(cluster: str, method: str, target: ObjectPath | None) -> bool:
    if target is None:
        return method in READ_METHODS
    if target.group == "cluster.karmada.io" and target.plural == "clusters":
        if target.name != cluster:
            return False
        # It reports its member's version and resource summary, like Karmada's agent; the spec is the admin's.
        return method in READ_METHODS or (method in STATUS_WRITES and target.subresource == "status")
    if target.group == "work.karmada.io" and target.plural == "works":
        if target.namespace != f"{EXECUTION_NAMESPACE_PREFIX}{cluster}":
            return False
        return method in READ_METHODS or (method in STATUS_WRITES and target.subresource == "status")
    if target.group == "coordination.k8s.io" and target.plural == "leases":
        own = target.namespace == LEASE_NAMESPACE and target.name == cluster
        return own and method in (READ_METHODS | {"PUT"})
    return False


def _is_secret(target: ObjectPath | None) -> bool:
    return target is not None and target.group == "" and target.plural == "secrets"


def _denied(principal: Principal, method: str, target: ObjectPath | None) -> StatusError:
    what = "this endpoint"
    if target is not None:
        what = f'{target.plural} "{target.name}"' if target.name else target.plural
        if target.namespace:
            what += f' in the namespace "{target.namespace}"'
    verb = method.lower()
    scope = f" (an agent of cluster {principal.cluster!r})" if principal.role == "agent" else ""
    return forbidden(f'{principal.role} "{principal.name}"{scope} cannot {verb} {what}')
