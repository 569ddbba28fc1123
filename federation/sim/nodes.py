"""The objects a fresh simulated cluster starts with: system namespaces and its simulated nodes.

Invariants:
- Node names are ``<cluster>-node-<i>`` (stable across restarts with the same config).
- Every node is Ready, schedulable, and has capacity == allocatable (cpu, memory, ephemeral-storage, pods,
  ``nvidia.com/gpu`` when ``node_gpu`` > 0, and any configured extended resources).
- Nodes carry ``topology.kubernetes.io/region``/``zone`` when the config names them.
"""

from __future__ import annotations

from typing import Any

from federation.sim.config import SimulatorConfig

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
GPU_RESOURCE = "nvidia.com/gpu"


def node_resources(config: SimulatorConfig) -> dict[str, str]:
    resources = {
        "cpu": config.node_cpu,
        "memory": config.node_memory,
        "ephemeral-storage": config.node_storage,
        "pods": str(config.node_pods),
    }
    if config.node_gpu:
        resources[GPU_RESOURCE] = str(config.node_gpu)
    resources.update(config.node_extended)
    return resources


def node_labels(config: SimulatorConfig, name: str) -> dict[str, str]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "simulated",
    }
    if config.region:
        labels["topology.kubernetes.io/region"] = config.region
    if config.zone:
        labels["topology.kubernetes.io/zone"] = config.zone
    return labels


def make_node(config: SimulatorConfig, index: int) -> dict[str, Any]:
    name = f"{config.name}-node-{index}"
    resources = node_resources(config)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels(config, name)},
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250 + 1}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": config.kubernetes_version,
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "simulated://1.0",
            },
        },
    }


def seed_objects(config: SimulatorConfig) -> list[tuple[str, dict[str, Any]]]:
    """(plural, object) pairs to create at start, namespaces first."""
    namespaces = [
        ("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}})
        for n in SYSTEM_NAMESPACES
    ]
    nodes = [("nodes", make_node(config, i)) for i in range(config.nodes)]
    return namespaces + nodes
