"""kube-scheduler's own extender wire (``apiVersion: v1``): an extender written for kube-scheduler reads and
answers these messages unchanged, with the workload as the pod and every cluster as a Node.

    ExtenderArgs          = {"pod": Pod, "nodes": NodeList}        (nodeCacheCapable: false)
                          | {"pod": Pod, "nodenames": [...]}       (nodeCacheCapable: true)
    ExtenderFilterResult  = {"nodes", "nodenames", "failedNodes", "failedAndUnresolvableNodes", "error"}
    HostPriorityList      = [{"host", "score"}]
    ExtenderBindingArgs   = {"podName", "podNamespace", "podUID", "node"}  → {"error"}

The pod: ``metadata`` name/namespace/uid of the workload (the resource template), one container whose
``resources.requests`` are the per-replica request in Kubernetes quantities, the placement's
``clusterTolerations`` as ``spec.tolerations``, and two annotations for what a pod cannot say: the replica
count (``scheduling.federation.io/replicas``) and the binding as the cluster wire sends it
(``scheduling.federation.io/binding``, JSON).

A cluster as a Node: ``metadata.name`` the cluster name; ``metadata.labels`` the cluster's labels over
``kubernetes.io/hostname`` (the cluster name), ``topology.kubernetes.io/region`` (``spec.region``) and
``topology.kubernetes.io/zone`` (a single ``spec.zones`` entry); ``spec.taints`` the cluster's taints;
``status.capacity`` the cluster's allocatable total (``resourceSummary.allocatable``);
``status.allocatable`` what is still free for new replicas (allocatable - allocated - allocating, never
negative): an extender keeps no pod cache of a member cluster, so the Node's allocatable is the figure it
can judge by; the Ready condition.

Reading answers follows Go's ``encoding/json``: keys match case-insensitively (extenders written with
untagged Go structs answer ``Nodes``/``NodeNames``/``FailedNodes``/``Error``). The passing clusters are
``nodenames`` or ``nodes``, whichever is present (the one matching ``nodeCacheCapable`` first); naming a
cluster that was not offered is an error (kube-scheduler's rule).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from federation.extenders.cluster_wire import binding_payload, clamp_priorities
from federation.scheduling.extender import ExtenderError, ExtenderFilterResult, HostPriority
from federation.scheduling.types import CPU, PODS, BindingInput, ClusterSnapshot, TargetCluster

REPLICAS_ANNOTATION = "scheduling.federation.io/replicas"
BINDING_ANNOTATION = "scheduling.federation.io/binding"
HOSTNAME_LABEL = "kubernetes.io/hostname"
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"


def quantity(resource: str, value: int) -> str:
    """A base-unit int as a Kubernetes quantity: cpu from milli-cores (``"4"``, ``"500m"``), others as is."""
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    return str(value)


def pod_of(binding: BindingInput) -> dict[str, Any]:
    """The workload as the ``v1.Pod`` kube-scheduler would send: one replica's requests, its tolerations."""
    requests = {r: quantity(r, q) for r, q in sorted(binding.resource_request.items()) if q > 0 and r != PODS}
    payload = json.dumps(binding_payload(binding), sort_keys=True, separators=(",", ":"))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": binding.name,
            "namespace": binding.namespace,
            "uid": binding.uid,
            "annotations": {REPLICAS_ANNOTATION: str(binding.replicas), BINDING_ANNOTATION: payload},
        },
        "spec": {
            "containers": [{"name": binding.name or "workload", "resources": {"requests": requests}}],
            "tolerations": [t.dump() for t in binding.placement.tolerations()],
        },
    }


def node_of(cluster: ClusterSnapshot) -> dict[str, Any]:
    """One cluster as a ``v1.Node`` (see the module docstring for the mapping)."""
    labels = {HOSTNAME_LABEL: cluster.name}
    if cluster.region:
        labels[REGION_LABEL] = cluster.region
    if len(cluster.zones) == 1:
        labels[ZONE_LABEL] = cluster.zones[0]
    labels.update(cluster.labels)
    status: dict[str, Any] = {
        "conditions": [{"type": "Ready", "status": "True" if cluster.ready else "False"}],
    }
    if cluster.allocatable is not None:
        status["capacity"] = {r: quantity(r, v) for r, v in sorted(cluster.allocatable.items())}
        status["allocatable"] = {r: quantity(r, max(0, cluster.free(r))) for r in sorted(cluster.allocatable)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": cluster.name, "labels": labels},
        "spec": {"taints": [t.dump() for t in cluster.taints]},
        "status": status,
    }


def field_of(body: Mapping[str, Any], name: str) -> Any:
    """``body[name]``, else the first key equal to it ignoring case (Go's ``encoding/json``), else None."""
    if name in body:
        return body[name]
    wanted = name.lower()
    return next((v for k, v in body.items() if isinstance(k, str) and k.lower() == wanted), None)


def _names(values: Any, what: str) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ExtenderError(f"malformed filter result: {what} must be a list of names")
    return list(values)


def _node_names(nodes: Any) -> list[str]:
    items = field_of(nodes, "items") if isinstance(nodes, Mapping) else None
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise ExtenderError("malformed filter result: nodes must be a NodeList {items: [...]}")
    metadata = [field_of(i, "metadata") for i in items]
    names = [field_of(m, "name") if isinstance(m, Mapping) else None for m in metadata]
    return _names(names, "nodes.items[].metadata.name")


def _reasons(values: Any, what: str) -> dict[str, str]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ExtenderError(f"malformed filter result: {what} must map a node name to a reason")
    return {str(k): str(v) for k, v in values.items()}


class KubeWire:
    """Requests and answers of kube-scheduler's wire."""

    def args(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot], names_only: bool
    ) -> dict[str, Any]:
        """``ExtenderArgs``: the pod plus ``nodenames`` (node-cache capable) or a ``NodeList``."""
        args: dict[str, Any] = {"pod": pod_of(binding)}
        if names_only:
            args["nodenames"] = [c.name for c in clusters]
        else:
            items = [node_of(c) for c in clusters]
            args["nodes"] = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items}
        return args

    def filter_result(self, body: Any, offered: Sequence[str], names_only: bool) -> ExtenderFilterResult:
        """``ExtenderFilterResult`` → the clusters that stay and the reasons of those that do not."""
        if not isinstance(body, Mapping):
            raise ExtenderError("filter must answer an ExtenderFilterResult object")
        error = field_of(body, "error")
        if error:
            raise ExtenderError(str(error))
        by_name, nodes = field_of(body, "nodenames"), field_of(body, "nodes")
        if by_name is not None and (names_only or nodes is None):
            names = _names(by_name, "nodenames")
        elif nodes is not None:
            names = _node_names(nodes)
        else:
            names = []
        unknown = sorted(set(names) - set(offered))
        if unknown:
            raise ExtenderError(f"claims filtered cluster(s) not in the input list: {', '.join(unknown)}")
        failed = _reasons(field_of(body, "failedNodes"), "failedNodes")
        hard = _reasons(field_of(body, "failedAndUnresolvableNodes"), "failedAndUnresolvableNodes")
        return ExtenderFilterResult(tuple(names), failed, hard)

    def priorities(self, body: Any) -> list[HostPriority]:
        """``HostPriorityList``: ``[{host, score}]`` (keys in any case)."""
        if not isinstance(body, list) or not all(isinstance(p, Mapping) for p in body):
            raise ExtenderError("prioritize must answer a HostPriorityList [{host, score}]")
        pairs = [(field_of(p, "host"), field_of(p, "score")) for p in body]
        if any(host is None or score is None for host, score in pairs):
            raise ExtenderError("malformed priority list: every entry needs host and score")
        return clamp_priorities(pairs)

    def bind_args(self, binding: BindingInput, target: TargetCluster) -> dict[str, Any]:
        """``ExtenderBindingArgs`` exactly: the workload as the pod, the cluster as the node."""
        return {
            "podName": binding.name,
            "podNamespace": binding.namespace,
            "podUID": binding.uid,
            "node": target.name,
        }
