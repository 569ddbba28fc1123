"""The agent's pure decisions: member manifests and their hashes, health, Work status and conditions."""

from __future__ import annotations

from typing import Any

import pytest

from federation.members.agent_status import (
    HASH_ANNOTATION,
    ManifestOutcome,
    WorkRef,
    hash_of,
    identifier,
    manifest_hash,
    manifest_status,
    member_manifest,
    merge_condition,
    work_of,
    work_status,
)

REF = WorkRef("karmada-es-m1", "web-abc")


def deployment(replicas: int = 2, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 2},
        "spec": {"replicas": replicas},
        "status": status,
    }


def test_the_hash_is_stable_and_covers_the_manifest_and_the_work() -> None:
    manifest = deployment()
    reordered = dict(reversed(list(manifest.items())))
    assert manifest_hash(REF, manifest) == manifest_hash(REF, reordered)
    assert manifest_hash(REF, manifest) != manifest_hash(REF, deployment(3))
    assert manifest_hash(REF, manifest) != manifest_hash(WorkRef("karmada-es-m1", "other"), manifest)


def test_the_member_manifest_is_marked_and_the_work_manifest_untouched() -> None:
    manifest = deployment()
    marked = member_manifest(REF, manifest)
    assert "labels" not in manifest["metadata"]
    assert work_of(marked) == REF
    assert (
        hash_of(marked) == marked["metadata"]["annotations"][HASH_ANNOTATION] == manifest_hash(REF, manifest)
    )


def test_objects_without_the_managed_label_belong_to_no_work() -> None:
    marked = member_manifest(REF, deployment())
    del marked["metadata"]["labels"]["karmada.io/managed"]
    assert work_of(marked) is None


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (None, "Unknown"),
        (deployment(2, observedGeneration=2, updatedReplicas=2, availableReplicas=2), "Healthy"),
        (deployment(2, observedGeneration=2, updatedReplicas=2, availableReplicas=1), "Unhealthy"),
        (deployment(2, observedGeneration=1, updatedReplicas=2, availableReplicas=2), "Unhealthy"),
        (deployment(2, observedGeneration=2, updatedReplicas=1, availableReplicas=1), "Unhealthy"),
        (deployment(2, observedGeneration="x"), "Unknown"),
        ({"kind": "Pod", "status": {"phase": "Pending"}}, "Unhealthy"),
        ({"kind": "Pod", "status": {"phase": "Running"}}, "Unhealthy"),
        (
            {
                "kind": "Pod",
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
            },
            "Healthy",
        ),
        ({"kind": "ConfigMap", "data": {}}, "Healthy"),
    ],
)
def test_health_follows_karmadas_default_interpreter(obj: dict[str, Any] | None, expected: str) -> None:
    """The agent reports health with the same interpreter as push work sync."""
    assert manifest_status(ManifestOutcome({"ordinal": 0}, obj))["health"] == expected


def test_identifier_of_core_and_grouped_kinds() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    assert identifier(1, config_map) == {
        "ordinal": 1,
        "group": "",
        "version": "v1",
        "kind": "ConfigMap",
        "namespace": "ns",
        "name": "c",
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    assert "namespace" not in identifier(0, namespace)


def test_an_unchanged_outcome_gives_an_equal_status() -> None:
    outcome = ManifestOutcome(
        identifier(0, deployment()), deployment(2, updatedReplicas=2, observedGeneration=2)
    )
    first = work_status(None, [outcome], "2024-01-01T00:00:00Z")
    second = work_status(first, [outcome], "2024-01-01T00:05:00Z")
    assert first == second
    reflected = first["manifestStatuses"][0]["status"]
    # Karmada's Deployment reflector: its counters, omitted ones as 0 (the push side's shape).
    assert reflected == {
        "replicas": 0,
        "readyReplicas": 0,
        "availableReplicas": 0,
        "unavailableReplicas": 0,
        "updatedReplicas": 2,
        "observedGeneration": 2,
        "generation": 2,
        "resourceTemplateGeneration": 0,
    }


def test_the_applied_condition_reports_failures_and_flips_its_transition_time() -> None:
    ok = ManifestOutcome(identifier(0, deployment()), deployment())
    bad = ManifestOutcome(identifier(1, deployment()), None, "Deployment default/web: denied")
    failed = work_status(None, [ok, bad], "2024-01-01T00:00:00Z")
    condition = failed["conditions"][0]
    assert condition["status"] == "False" and condition["reason"] == "AppliedFailed"
    assert condition["message"] == "Failed to apply all manifests (1/2): Deployment default/web: denied"
    recovered = work_status(failed, [ok], "2024-01-01T00:01:00Z")["conditions"][0]
    assert recovered["status"] == "True" and recovered["lastTransitionTime"] == "2024-01-01T00:01:00Z"


def test_merge_condition_keeps_other_conditions() -> None:
    previous = {"conditions": [{"type": "Available", "status": "True"}]}
    merged = merge_condition(previous, {"type": "Applied", "status": "True", "lastTransitionTime": "t"})
    assert [c["type"] for c in merged] == ["Available", "Applied"]


def test_workloads_report_the_template_generation_they_were_rendered_from() -> None:
    rendered = deployment(2, observedGeneration=2)
    rendered["metadata"]["annotations"] = {"resourcetemplate.karmada.io/generation": "7"}
    status = work_status(None, [ManifestOutcome(identifier(0, rendered), rendered)], "t")["manifestStatuses"][
        0
    ]["status"]
    assert status["generation"] == 2 and status["resourceTemplateGeneration"] == 7
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "status": {"x": 1}}
    assert work_status(None, [ManifestOutcome(identifier(0, config_map), config_map)], "t")[
        "manifestStatuses"
    ][0]["status"] == {"x": 1}
