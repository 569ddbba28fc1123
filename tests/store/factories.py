"""Plain-function factories for Kubernetes-shaped objects: ``make_x(**overrides)``."""

from __future__ import annotations

import copy
from typing import Any


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = value
    return result


def make_cluster(name: str = "member1", **overrides: Any) -> dict[str, Any]:
    return _merge(
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name, "labels": {"env": "prod"}},
            "spec": {
                "syncMode": "Push",
                "apiEndpoint": f"https://{name}.example:6443",
                "provider": "aws",
                "region": "us-east-1",
                "zones": ["us-east-1a"],
            },
        },
        overrides,
    )


def make_deployment(name: str = "nginx", namespace: str = "default", **overrides: Any) -> dict[str, Any]:
    return _merge(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": name, "image": "nginx:1.25"}]},
                },
            },
        },
        overrides,
    )


def make_configmap(name: str = "config", namespace: str = "default", **overrides: Any) -> dict[str, Any]:
    return _merge(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"key": "value"},
        },
        overrides,
    )


def make_propagation_policy(
    name: str = "nginx-propagation", namespace: str = "default", **overrides: Any
) -> dict[str, Any]:
    return _merge(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
                "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}},
            },
        },
        overrides,
    )


def make_cluster_propagation_policy(name: str = "cpp", **overrides: Any) -> dict[str, Any]:
    return _merge(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterPropagationPolicy",
            "metadata": {"name": name},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}]},
        },
        overrides,
    )


def make_workload_policy(name: str = "wp", namespace: str = "default", **overrides: Any) -> dict[str, Any]:
    return _merge(
        {
            "apiVersion": "kosmos.io/v1alpha1",
            "kind": "WorkloadPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "topologyKey": "topology.kubernetes.io/zone",
                "allocationPolicy": [{"name": "a", "replicas": 1}],
            },
        },
        overrides,
    )


def make_rebalancer(name: str = "demo", **overrides: Any) -> dict[str, Any]:
    return _merge(
        {
            "apiVersion": "apps.karmada.io/v1alpha1",
            "kind": "WorkloadRebalancer",
            "metadata": {"name": name},
            "spec": {
                "workloads": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "namespace": "default"}
                ]
            },
        },
        overrides,
    )


def make_binding(
    name: str = "nginx-deployment",
    namespace: str = "default",
    clusters: list[dict[str, Any]] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resource": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": namespace,
            "name": "nginx",
            "uid": "template-uid-1",
        },
        "replicas": 3,
    }
    if clusters is not None:
        spec["clusters"] = clusters
    return _merge(
        {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding" if namespace else "ClusterResourceBinding",
            "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
            "spec": spec,
        },
        overrides,
    )


def make_work(
    name: str = "nginx-687f7fb96f",
    cluster: str = "member1",
    binding: tuple[str, str] | None = ("default", "nginx-deployment"),
    **overrides: Any,
) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if binding is not None:
        annotations = {
            "resourcebinding.karmada.io/namespace": binding[0],
            "resourcebinding.karmada.io/name": binding[1],
        }
    return _merge(
        {
            "apiVersion": "work.karmada.io/v1alpha1",
            "kind": "Work",
            "metadata": {"name": name, "namespace": f"karmada-es-{cluster}", "annotations": annotations},
            "spec": {"workload": {"manifests": [make_deployment()]}},
        },
        overrides,
    )
