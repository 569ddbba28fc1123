"""The kind registry: every API object kind the control plane serves by name, and how to describe any other.

Invariants:
- Every name a user can type (plural, singular, short name, Kind, and ``plural.group``) resolves to exactly
  one registered kind; a collision is a bug caught at import time.
- Short names are Karmada's CRD short names (pp, cpp, rb, crb, wk) and Kubernetes' (deploy, sts, ...), plus
  ``wr`` for WorkloadRebalancer and ``wlp`` (Kosmos' own) for WorkloadPolicy. Karmada's WorkloadRebalancer CRD
  declares no short name; ``wr`` is ours (DESIGN.md's CLI contract). Karmada's Cluster is served by its
  aggregated API server and has no short name either.
- Any group/kind may be a resource template: ``template_kind`` describes one the registry does not know.
- ``KindInfo`` is a frozen, slotted value; compare and hash freely.
- An alias path serves a registered kind under another group (``by_alias_path``): today only
  ``policy.karmada.io/v1alpha1 workloadrebalancers``, a spelling blog posts use for Karmada's
  ``apps.karmada.io`` WorkloadRebalancer. Aliases are listed in discovery (``alias_kinds``, so kubectl can
  send such a manifest) but have no names of their own: ``lookup`` finds only the registered kind.
"""

from __future__ import annotations

from dataclasses import dataclass

KARMADA_GROUPS: frozenset[str] = frozenset(
    {"policy.karmada.io", "cluster.karmada.io", "work.karmada.io", "apps.karmada.io"}
)
KOSMOS_GROUP = "kosmos.io"


@dataclass(frozen=True, slots=True)
class KindInfo:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...] = ()
    namespaced: bool = True
    has_status: bool = True

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path_prefix(self) -> str:
        """``/api/v1`` for the core group, ``/apis/group/version`` otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    @property
    def resource(self) -> str:
        """``plural.group`` (just ``plural`` for the core group), as kubectl spells a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def names(self) -> tuple[str, ...]:
        """Every lower-cased name that resolves to this kind."""
        return (self.plural, self.singular, self.kind.lower(), self.resource, *self.short_names)


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` → ``("apps", "v1")``; ``"v1"`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _k(
    api_version: str,
    kind: str,
    plural: str,
    *short: str,
    namespaced: bool = True,
    status: bool = True,
) -> KindInfo:
    group, version = split_api_version(api_version)
    return KindInfo(group, version, kind, plural, kind.lower(), tuple(short), namespaced, status)


_KARMADA: tuple[KindInfo, ...] = (
    _k("policy.karmada.io/v1alpha1", "PropagationPolicy", "propagationpolicies", "pp", status=False),
    _k(
        "policy.karmada.io/v1alpha1",
        "ClusterPropagationPolicy",
        "clusterpropagationpolicies",
        "cpp",
        namespaced=False,
        status=False,
    ),
    _k("work.karmada.io/v1alpha2", "ResourceBinding", "resourcebindings", "rb"),
    _k(
        "work.karmada.io/v1alpha2",
        "ClusterResourceBinding",
        "clusterresourcebindings",
        "crb",
        namespaced=False,
    ),
    _k("work.karmada.io/v1alpha1", "Work", "works", "wk"),
    _k("cluster.karmada.io/v1alpha1", "Cluster", "clusters", namespaced=False),
    _k("apps.karmada.io/v1alpha1", "WorkloadRebalancer", "workloadrebalancers", "wr", namespaced=False),
    _k(
        "policy.karmada.io/v1alpha1",
        "ClusterTaintPolicy",
        "clustertaintpolicies",
        namespaced=False,
        status=False,
    ),
)
_KOSMOS: tuple[KindInfo, ...] = (
    _k("kosmos.io/v1alpha1", "WorkloadPolicy", "workloadpolicies", "wlp", status=False),
)
_BUILTIN: tuple[KindInfo, ...] = (
    _k("apps/v1", "Deployment", "deployments", "deploy"),
    _k("apps/v1", "StatefulSet", "statefulsets", "sts"),
    _k("apps/v1", "DaemonSet", "daemonsets", "ds"),
    _k("apps/v1", "ReplicaSet", "replicasets", "rs"),
    _k("batch/v1", "Job", "jobs"),
    _k("batch/v1", "CronJob", "cronjobs", "cj"),
    _k("v1", "Pod", "pods", "po"),
    _k("v1", "Service", "services", "svc"),
    _k("v1", "ConfigMap", "configmaps", "cm", status=False),
    _k("v1", "Secret", "secrets", status=False),
    _k("v1", "Namespace", "namespaces", "ns", namespaced=False),
    _k("v1", "ServiceAccount", "serviceaccounts", "sa", status=False),
    _k("v1", "PersistentVolumeClaim", "persistentvolumeclaims", "pvc"),
    _k("v1", "PersistentVolume", "persistentvolumes", "pv", namespaced=False),
    _k("v1", "ResourceQuota", "resourcequotas", "quota"),
    _k("v1", "LimitRange", "limitranges", "limits", status=False),
    _k("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", "pc", namespaced=False, status=False),
    _k("networking.k8s.io/v1", "Ingress", "ingresses", "ing"),
    _k("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", "netpol", status=False),
    _k("rbac.authorization.k8s.io/v1", "Role", "roles", status=False),
    _k("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", status=False),
    _k("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False, status=False),
    _k(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        namespaced=False,
        status=False,
    ),
    _k("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "hpa"),
    _k("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", "pdb"),
    _k("storage.k8s.io/v1", "StorageClass", "storageclasses", "sc", namespaced=False, status=False),
    _k(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "crd",
        "crds",
        namespaced=False,
    ),
)
_ALL: tuple[KindInfo, ...] = _KARMADA + _KOSMOS + _BUILTIN


def _index_names(kinds: tuple[KindInfo, ...]) -> dict[str, KindInfo]:
    index: dict[str, KindInfo] = {}
    for info in kinds:
        for name in info.names():
            other = index.setdefault(name.lower(), info)
            if other is not info:
                raise AssertionError(f"kind name {name!r} names both {other.kind} and {info.kind}")
    return index


_BY_NAME = _index_names(_ALL)
_BY_GVK = {(i.api_version, i.kind): i for i in _ALL}
_BY_PATH = {(i.group, i.version, i.plural): i for i in _ALL}
# Alias (as discovery lists it) → the registered kind it stores as.
_REBALANCER_ALIAS = _k(
    "policy.karmada.io/v1alpha1", "WorkloadRebalancer", "workloadrebalancers", namespaced=False
)
_ALIASES: dict[KindInfo, KindInfo] = {
    _REBALANCER_ALIAS: _BY_GVK[("apps.karmada.io/v1alpha1", "WorkloadRebalancer")],
}
_BY_ALIAS_PATH = {(a.group, a.version, a.plural): kind for a, kind in _ALIASES.items()}


def lookup(name: str) -> KindInfo:
    """Resolve a kind name: case-insensitive plural, singular, short name, Kind or plural.group."""
    info = _BY_NAME.get(name.strip().lower())
    if info is None:
        raise KeyError(
            f"unknown resource type {name!r}: use a plural (deployments), singular (deployment), "
            "short name (deploy, pp, rb, ...) or Kind; `federation get` lists the served kinds"
        )
    return info


def by_gvk(api_version: str, kind: str) -> KindInfo | None:
    """The registered kind for ``apiVersion``/``kind``, or None."""
    return _BY_GVK.get((api_version, kind))


def by_path(group: str, version: str, plural: str) -> KindInfo | None:
    """The kind served at ``/apis/{group}/{version}/{plural}`` (group "" for ``/api/v1``), or None."""
    return _BY_PATH.get((group, version, plural))


def by_alias_path(group: str, version: str, plural: str) -> KindInfo | None:
    """The registered kind an alias path serves (``/apis/policy.karmada.io/v1alpha1/workloadrebalancers``
    serves apps.karmada.io WorkloadRebalancers), or None."""
    return _BY_ALIAS_PATH.get((group, version, plural))


def alias_kinds() -> tuple[KindInfo, ...]:
    """The alias paths as discovery lists them (their own group, the registered kind's name)."""
    return tuple(_ALIASES)


def all_kinds() -> tuple[KindInfo, ...]:
    return _ALL


def karmada_kinds() -> tuple[KindInfo, ...]:
    """Karmada's own kinds (policies, bindings, works, clusters, rebalancers)."""
    return _KARMADA


def builtin_kinds() -> tuple[KindInfo, ...]:
    """The Kubernetes kinds registered as resource templates."""
    return _BUILTIN


_BUILTIN_GVK = frozenset((i.group, i.version, i.kind) for i in _BUILTIN)


def is_builtin_kind(info: KindInfo) -> bool:
    """A registered Kubernetes kind (exact group, version and kind): kube-apiserver's rules apply to it.

    Compared by group/version/kind alone, so a KindInfo built elsewhere for the same kind counts too.
    """
    return (info.group, info.version, info.kind) in _BUILTIN_GVK


_SCALABLE = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")})


def has_scale(info: KindInfo) -> bool:
    """A kind with a ``scale`` subresource (autoscaling/v1 Scale), as kube-apiserver serves it."""
    return (info.group, info.kind) in _SCALABLE


def is_karmada_kind(info: KindInfo) -> bool:
    return info.group in KARMADA_GROUPS


def is_kosmos_kind(info: KindInfo) -> bool:
    return info.group == KOSMOS_GROUP


def is_federation_kind(info: KindInfo) -> bool:
    """Karmada or Kosmos kinds: control-plane objects, never resource templates."""
    return is_karmada_kind(info) or is_kosmos_kind(info)


def guess_plural(kind: str) -> str:
    """Kubernetes' naive pluralisation (``UnsafeGuessKindToResource``): lower-case, then s→ses,
    consonant+y→ies, else +s. One rule for the API, the CLI and the member clients, so they agree."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def template_kind(
    api_version: str, kind: str, plural: str | None = None, namespaced: bool = True
) -> KindInfo:
    """Describe any resource template: the registered kind if known, else an ad-hoc KindInfo.

    ``plural`` defaults to ``guess_plural(kind)`` (callers that know the real plural pass it).
    """
    known = by_gvk(api_version, kind)
    if known is not None:
        return known
    group, version = split_api_version(api_version)
    return KindInfo(group, version, kind, plural or guess_plural(kind), kind.lower(), (), namespaced, True)
