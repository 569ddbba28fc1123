"""Karmada's status interpreter rules (reflect, health) as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from federation.model.status_interpreter import (
    identifier,
    interpret_health,
    manifest_status,
    reflect_status,
)


def _deployment(replicas: int = 3, generation: int = 2, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d",
            "namespace": "ns",
            "generation": generation,
            "annotations": {"resourcetemplate.karmada.io/generation": "5"},
        },
        "spec": {"replicas": replicas},
        "status": status,
    }


@pytest.mark.parametrize(
    ("status", "health"),
    [
        ({"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3}, "Healthy"),
        (
            {"observedGeneration": 1, "updatedReplicas": 3, "availableReplicas": 3},
            "Unhealthy",
        ),  # not observed
        ({"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2}, "Unhealthy"),  # rolling
        (
            {"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 1},
            "Unhealthy",
        ),  # not available
        ({"observedGeneration": 2}, "Unhealthy"),  # zero counters omitted
        ({"observedGeneration": "2"}, "Unknown"),  # unreadable
    ],
)
def test_deployment_health(status: dict[str, Any], health: str) -> None:
    assert interpret_health(_deployment(**status)) == health


def test_a_deployment_scaled_to_zero_is_healthy_with_omitted_counters() -> None:
    assert interpret_health(_deployment(replicas=0, observedGeneration=2)) == "Healthy"


def test_statefulset_partition_and_availability() -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "s", "generation": 1},
        "spec": {"replicas": 3, "updateStrategy": {"rollingUpdate": {"partition": 2}}},
        "status": {"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 3},
    }
    assert interpret_health(sts) == "Healthy"
    sts["status"]["availableReplicas"] = 2
    assert interpret_health(sts) == "Unhealthy"


def test_other_kinds() -> None:
    lb = {"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"}, "status": {}}
    assert interpret_health(lb) == "Unhealthy"
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}
    assert interpret_health(lb) == "Healthy"
    assert (
        interpret_health({"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"}}) == "Healthy"
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert interpret_health(pod) == "Healthy"
    assert interpret_health({"apiVersion": "v1", "kind": "ConfigMap"}) == "Healthy"  # no rule: Healthy


def test_reflected_deployment_status_lists_every_counter_and_the_federated_generation() -> None:
    reflected = reflect_status(
        _deployment(observedGeneration=2, readyReplicas=3, conditions=[{"type": "Available"}])
    )
    assert reflected == {
        "replicas": 0, "updatedReplicas": 0, "readyReplicas": 3, "availableReplicas": 0, "unavailableReplicas": 0,
        "observedGeneration": 2, "generation": 2, "resourceTemplateGeneration": 5,
    }  # fmt: skip


def test_manifest_status_entries() -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    assert identifier(manifest, 0) == {
        "ordinal": 0,
        "group": "",
        "version": "v1",
        "kind": "ConfigMap",
        "namespace": "ns",
        "name": "c",
    }
    assert manifest_status(manifest, 0, manifest) == {
        "identifier": identifier(manifest, 0),
        "health": "Healthy",
    }
    assert manifest_status(manifest, 0, None)["health"] == "Unknown"
