"""A Kosmos WorkloadPolicy written or changed after a binding was scheduled reschedules the binding."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.controllers.test_scheduler import DYNAMIC, Harness, deployment, policy


def workload_policy(quota: dict[str, int], allocation_type: str = "Required") -> dict[str, Any]:
    return {
        "apiVersion": "kosmos.io/v1alpha1",
        "kind": "WorkloadPolicy",
        "metadata": {"name": "split", "namespace": "default"},
        "spec": {
            "topologyKey": "tier",
            "allocationPolicy": [{"name": k, "replicas": v} for k, v in quota.items()],
            "allocationType": allocation_type,
            "allocationMethod": "Fill",
            "labelSelector": {"matchLabels": {"app": "web"}},
        },
    }


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url)
    running.add_cluster("member1", labels={"tier": "edge"})
    running.add_cluster("member2", labels={"tier": "core"})
    yield running
    running.close()


def test_policy_created_later_then_changed_reschedules(harness: Harness) -> None:
    harness.create(deployment("web", 4))
    harness.create(policy("web", {"replicaScheduling": DYNAMIC}, ["web"]))
    harness.run()
    before = harness.placement("web-deployment")
    assert sum(before.values()) == 4

    harness.create(workload_policy({"edge": 1, "core": 3}))
    harness.run()
    assert harness.placement("web-deployment") == {"member1": 1, "member2": 3}
    explanation = harness.binding("web-deployment")["status"]["schedulingExplanation"]
    assert explanation["trigger"] == "WorkloadPolicyChanged"

    harness.replace(workload_policy({"edge": 3, "core": 1}))
    harness.run()
    assert harness.placement("web-deployment") == {"member1": 3, "member2": 1}

    # Nothing changed: the binding is not scheduled again.
    decisions = len(harness.decisions("web-deployment"))
    harness.run()
    assert len(harness.decisions("web-deployment")) == decisions
