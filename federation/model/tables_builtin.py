"""kube-apiserver's printers for the Kubernetes kinds we serve or simulate (``pkg/printers/internalversion``):
the same columns, in the same order, with the same cell texts; ``printer_for`` picks any kind's columns.
Workloads are in ``tables_workloads``; Pods, Nodes and Events in ``tables_pods``.

Invariants:
- Keyed by (group, kind): a CRD's kind that happens to share a name with a Kubernetes kind is not printed
  as the Kubernetes one.
- Cells read the stored JSON defensively (``get``); defaults are the API's (a Deployment without
  ``spec.replicas`` wants 1, a Service without a type is ClusterIP).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from federation.model import tables_pods
from federation.model import tables_workloads as workloads
from federation.model.tables import (
    AGE,
    DEFAULT_COLUMNS,
    FEDERATION_COLUMNS,
    NAME,
    Cell,
    Column,
    Obj,
    get,
)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _status_int(*path: str) -> Cell:
    return lambda obj, _now: _int(get(obj, "status", *path))


def _service_external_ip(obj: Obj, _now: datetime) -> str:
    spec = _mapping(get(obj, "spec"))
    external = [str(ip) for ip in _items(spec.get("externalIPs"))]
    kind = spec.get("type") or "ClusterIP"
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    if kind != "LoadBalancer":
        return "<unknown>"
    ingress = [_mapping(i) for i in _items(get(obj, "status", "loadBalancer", "ingress"))]
    balancers = sorted(
        {str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")}
    )
    return ",".join([*balancers, *external]) or "<pending>"


def _service_ports(obj: Obj, _now: datetime) -> str:
    pieces = []
    for port in (_mapping(p) for p in _items(get(obj, "spec", "ports"))):
        protocol = port.get("protocol") or "TCP"
        node_port = _int(port.get("nodePort"))
        middle = f":{node_port}" if node_port > 0 else ""
        pieces.append(f"{port.get('port')}{middle}/{protocol}")
    return ",".join(pieces) or "<none>"


def _cluster_ip(obj: Obj, _now: datetime) -> str:
    ips = _items(get(obj, "spec", "clusterIPs"))
    return str(ips[0]) if ips else str(get(obj, "spec", "clusterIP") or "<none>")


SERVICE = (
    NAME,
    Column("Type", lambda o, _n: get(o, "spec", "type") or "ClusterIP"),
    Column("Cluster-IP", _cluster_ip),
    Column("External-IP", _service_external_ip),
    Column("Port(s)", _service_ports),
    AGE,
    Column("Selector", lambda o, _n: workloads.format_labels(get(o, "spec", "selector")), priority=1),
)
CONFIG_MAP = (
    NAME,
    Column("Data", lambda o, _n: len(_mapping(get(o, "data"))) + len(_mapping(get(o, "binaryData")))),
    AGE,
)
SECRET = (
    NAME,
    Column("Type", lambda o, _n: get(o, "type") or "Opaque"),
    Column("Data", lambda o, _n: len({**_mapping(get(o, "data")), **_mapping(get(o, "stringData"))})),
    AGE,
)
NAMESPACE = (NAME, Column("Status", lambda o, _n: get(o, "status", "phase") or "Active"), AGE)
SERVICE_ACCOUNT = (NAME, Column("Secrets", lambda o, _n: len(_items(get(o, "secrets")))), AGE)
_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def access_modes(modes: Any) -> str:
    """``GetAccessModesAsString``: the short names, each once, in kube's order."""
    present = {str(m) for m in _items(modes)}
    return ",".join(short for mode, short in _MODES.items() if mode in present)


def _unset(*path: str) -> Cell:
    return lambda obj, _now: get(obj, "spec", *path) or "<unset>"


def _claim_class(obj: Obj, _now: datetime) -> str:
    beta = _mapping(get(obj, "metadata", "annotations")).get("volume.beta.kubernetes.io/storage-class")
    return str(beta or get(obj, "spec", "storageClassName") or "")


def _claim_capacity(obj: Obj, _now: datetime) -> str:
    return str(get(obj, "status", "capacity", "storage") or "") if get(obj, "spec", "volumeName") else ""


def _claim_modes(obj: Obj, _now: datetime) -> str:
    return access_modes(get(obj, "status", "accessModes")) if get(obj, "spec", "volumeName") else ""


def _phase(obj: Obj, _now: datetime) -> str:
    return (
        "Terminating" if get(obj, "metadata", "deletionTimestamp") else str(get(obj, "status", "phase") or "")
    )


PERSISTENT_VOLUME_CLAIM = (
    NAME,
    Column("Status", _phase),
    Column("Volume", lambda o, _n: get(o, "spec", "volumeName") or ""),
    Column("Capacity", _claim_capacity),
    Column("Access Modes", _claim_modes),
    Column("StorageClass", _claim_class),
    Column("VolumeAttributesClass", _unset("volumeAttributesClassName")),
    AGE,
    Column("VolumeMode", _unset("volumeMode"), priority=1),
)


def _claim_ref(obj: Obj, _now: datetime) -> str:
    ref = get(obj, "spec", "claimRef")
    return f"{get(ref, 'namespace') or ''}/{get(ref, 'name') or ''}" if isinstance(ref, Mapping) else ""


PERSISTENT_VOLUME = (
    NAME,
    Column("Capacity", lambda o, _n: str(get(o, "spec", "capacity", "storage") or "0")),
    Column("Access Modes", lambda o, _n: access_modes(get(o, "spec", "accessModes"))),
    Column("Reclaim Policy", lambda o, _n: get(o, "spec", "persistentVolumeReclaimPolicy") or ""),
    Column("Status", _phase),
    Column("Claim", _claim_ref),
    Column("StorageClass", _claim_class),
    Column("VolumeAttributesClass", _unset("volumeAttributesClassName")),
    Column("Reason", lambda o, _n: get(o, "status", "reason") or ""),
    AGE,
    Column("VolumeMode", _unset("volumeMode"), priority=1),
)


def _quota_column(limits: bool) -> Cell:
    def cell(obj: Obj, _now: datetime) -> str:
        hard, used = _mapping(get(obj, "status", "hard")), _mapping(get(obj, "status", "used"))
        names = [n for n in sorted(hard) if str(n).startswith("limits.") == limits]
        return ", ".join(f"{n}: {used.get(n, '0')}/{hard[n]}" for n in names)

    return cell


RESOURCE_QUOTA = (
    NAME,
    Column("Request", _quota_column(False)),
    Column("Limit", _quota_column(True)),
    AGE,
)
PRIORITY_CLASS = (
    NAME,
    Column("Value", lambda o, _n: _int(get(o, "value")), "integer"),
    Column("Global-Default", lambda o, _n: get(o, "globalDefault") is True, "boolean"),
    AGE,
    Column("PreemptionPolicy", lambda o, _n: get(o, "preemptionPolicy") or "PreemptLowerPriority"),
)


def _ingress_hosts(obj: Obj, _now: datetime) -> str:
    rules = [_mapping(r) for r in _items(get(obj, "spec", "rules"))]
    hosts = [str(r["host"]) for r in rules[:3] if r.get("host")]
    if not hosts:
        return "*"
    more = len(rules) - 3
    return ",".join(hosts) + (f" + {more} more..." if more > 0 else "")


def _ingress_address(obj: Obj, _now: datetime) -> str:
    ingress = [_mapping(i) for i in _items(get(obj, "status", "loadBalancer", "ingress"))]
    return ",".join(
        sorted({str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")})
    )


INGRESS = (
    NAME,
    Column("Class", lambda o, _n: get(o, "spec", "ingressClassName") or "<none>"),
    Column("Hosts", _ingress_hosts),
    Column("Address", _ingress_address),
    Column("Ports", lambda o, _n: "80, 443" if _items(get(o, "spec", "tls")) else "80"),
    AGE,
)
NETWORK_POLICY = (
    NAME,
    Column("Pod-Selector", lambda o, _n: workloads.format_selector(get(o, "spec", "podSelector"))),
    AGE,
)


def _subjects(kind: str) -> Cell:
    def cell(obj: Obj, _now: datetime) -> str:
        found = []
        for subject in (_mapping(s) for s in _items(get(obj, "subjects"))):
            if subject.get("kind") != kind:
                continue
            name = str(subject.get("name") or "")
            found.append(f"{subject.get('namespace') or ''}/{name}" if kind == "ServiceAccount" else name)
        return ", ".join(found)

    return cell


ROLE_BINDING = (
    NAME,
    Column("Role", lambda o, _n: f"{get(o, 'roleRef', 'kind') or ''}/{get(o, 'roleRef', 'name') or ''}"),
    AGE,
    Column("Users", _subjects("User"), priority=1),
    Column("Groups", _subjects("Group"), priority=1),
    Column("ServiceAccounts", _subjects("ServiceAccount"), priority=1),
)


def _hpa_targets(obj: Obj, _now: datetime) -> str:
    """``formatHPAMetrics``: ``cpu: 40%/50%`` per metric, the first two then ``+ N more...``."""
    specs, statuses = _items(get(obj, "spec", "metrics")), _items(get(obj, "status", "currentMetrics"))
    if not specs:
        return "<none>"
    texts = [
        _hpa_metric(_mapping(s), _mapping(statuses[i]) if i < len(statuses) else {})
        for i, s in enumerate(specs)
    ]
    more = len(texts) - 2
    return ", ".join(texts[:2]) + (f" + {more} more..." if more > 0 else "")


_METRIC_SOURCES = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}


def _hpa_metric(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    kind = str(spec.get("type") or "")
    key = _METRIC_SOURCES.get(kind)
    if key is None:
        return "<unknown type>"
    source, current = _mapping(spec.get(key)), _mapping(_mapping(status.get(key)).get("current"))
    target = _mapping(source.get("target"))
    if kind in ("Resource", "ContainerResource"):
        name = source.get("name")
        if target.get("averageValue") is not None:
            return f"{name}: {current.get('averageValue', '<unknown>')}/{target['averageValue']}"
        now = current.get("averageUtilization")
        wanted = target.get("averageUtilization")
        shown = "<unknown>" if now is None else f"{now}%"
        return f"{name}: {shown}/{'<auto>' if wanted is None else f'{wanted}%'}"
    if kind == "Pods":
        return f"{current.get('averageValue', '<unknown>')}/{target.get('averageValue')}"
    if target.get("averageValue") is not None:
        return f"{current.get('averageValue', '<unknown>')}/{target['averageValue']} (avg)"
    return f"{current.get('value', '<unknown>')}/{target.get('value')}"


def _scale_target(obj: Obj, _now: datetime) -> str:
    target = get(obj, "spec", "scaleTargetRef")
    return f"{get(target, 'kind') or ''}/{get(target, 'name') or ''}"


def _hpa_min(obj: Obj, _now: datetime) -> str:
    value = get(obj, "spec", "minReplicas")
    return str(value) if isinstance(value, int) else "<unset>"


HORIZONTAL_POD_AUTOSCALER = (
    NAME,
    Column("Reference", _scale_target),
    Column("Targets", _hpa_targets),
    Column("MinPods", _hpa_min),
    Column("MaxPods", lambda o, _n: _int(get(o, "spec", "maxReplicas"))),
    Column("Replicas", _status_int("currentReplicas")),
    AGE,
)


def _pdb_bound(field: str) -> Cell:
    return lambda obj, _now: str(get(obj, "spec", field)) if get(obj, "spec", field) is not None else "N/A"


POD_DISRUPTION_BUDGET = (
    NAME,
    Column("Min Available", _pdb_bound("minAvailable")),
    Column("Max Unavailable", _pdb_bound("maxUnavailable")),
    Column("Allowed Disruptions", _status_int("disruptionsAllowed"), "integer"),
    AGE,
)


def _storage_class_name(obj: Obj, _now: datetime) -> str:
    annotations = _mapping(get(obj, "metadata", "annotations"))
    default = any(
        annotations.get(key) == "true"
        for key in (
            "storageclass.kubernetes.io/is-default-class",
            "storageclass.beta.kubernetes.io/is-default-class",
        )
    )
    name = str(get(obj, "metadata", "name") or "")
    return f"{name} (default)" if default else name


STORAGE_CLASS = (
    Column("Name", _storage_class_name, format="name", description=NAME.description),
    Column("Provisioner", lambda o, _n: get(o, "provisioner") or ""),
    Column("ReclaimPolicy", lambda o, _n: get(o, "reclaimPolicy") or "Delete"),
    Column("VolumeBindingMode", lambda o, _n: get(o, "volumeBindingMode") or "Immediate"),
    Column("AllowVolumeExpansion", lambda o, _n: get(o, "allowVolumeExpansion") is True),
    AGE,
)
LEASE = (NAME, Column("Holder", lambda o, _n: get(o, "spec", "holderIdentity") or ""), AGE)


def _columns_by_kind() -> dict[tuple[str, str], Sequence[Column]]:
    return {
        ("apps", "Deployment"): workloads.DEPLOYMENT,
        ("apps", "StatefulSet"): workloads.STATEFUL_SET,
        ("apps", "ReplicaSet"): workloads.REPLICA_SET,
        ("apps", "DaemonSet"): workloads.DAEMON_SET,
        ("batch", "Job"): workloads.JOB,
        ("batch", "CronJob"): workloads.CRON_JOB,
        ("", "Pod"): tables_pods.POD,
        ("", "Node"): tables_pods.NODE,
        ("", "Event"): tables_pods.EVENT,
        ("events.k8s.io", "Event"): tables_pods.EVENT,
        ("", "Service"): SERVICE,
        ("", "ConfigMap"): CONFIG_MAP,
        ("", "Secret"): SECRET,
        ("", "Namespace"): NAMESPACE,
        ("", "ServiceAccount"): SERVICE_ACCOUNT,
        ("", "PersistentVolumeClaim"): PERSISTENT_VOLUME_CLAIM,
        ("", "PersistentVolume"): PERSISTENT_VOLUME,
        ("", "ResourceQuota"): RESOURCE_QUOTA,
        ("scheduling.k8s.io", "PriorityClass"): PRIORITY_CLASS,
        ("networking.k8s.io", "Ingress"): INGRESS,
        ("networking.k8s.io", "NetworkPolicy"): NETWORK_POLICY,
        ("rbac.authorization.k8s.io", "RoleBinding"): ROLE_BINDING,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ROLE_BINDING,
        ("autoscaling", "HorizontalPodAutoscaler"): HORIZONTAL_POD_AUTOSCALER,
        ("policy", "PodDisruptionBudget"): POD_DISRUPTION_BUDGET,
        ("storage.k8s.io", "StorageClass"): STORAGE_CLASS,
        ("coordination.k8s.io", "Lease"): LEASE,
    }


BUILTIN_COLUMNS = _columns_by_kind()


def printer_for(group: str, kind: str) -> tuple[Column, ...]:
    """The columns of a registered kind: Karmada's and Kosmos' as their CRDs declare, Kubernetes' as
    kube-apiserver prints them, else the default Name/Created At. A CRD-defined kind is the caller's
    (``crd_columns`` of its version's ``additionalPrinterColumns``)."""
    found = FEDERATION_COLUMNS.get((group, kind)) or BUILTIN_COLUMNS.get((group, kind))
    return tuple(found) if found is not None else DEFAULT_COLUMNS
