"""Which WorkloadPolicy governs a workload: Kosmos binds pods, so the selector matches the pod template's labels
(or the workload's own), and a policy named by either Kosmos binding label, on the workload or its pod
template, wins."""

from __future__ import annotations

from typing import Any

import pytest

from federation.model.workloadpolicy import pod_template_labels
from federation.scheduling import planner

Manifest = dict[str, Any]


def wlp(name: str, selector: dict[str, str], namespace: str = "shop") -> Manifest:
    return {
        "apiVersion": "kosmos.io/v1alpha1", "kind": "WorkloadPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"topologyKey": "role", "labelSelector": {"matchLabels": selector},
                 "allocationPolicy": [{"name": "host", "replicas": 1}]},
    }  # fmt: skip


POLICIES = [wlp("by-app", {"app": "web"}), wlp("by-tier", {"tier": "db"}), wlp("named", {"never": "matches"}),
            wlp("named-too", {"never": "matches"}), wlp("by-app", {"app": "web"}, namespace="other"),
            wlp("both", {"app": "web", "tier": "db"})]  # fmt: skip


def deployment(own: dict[str, str] | None = None, pod: dict[str, str] | None = None) -> Manifest:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "w", "namespace": "shop", "labels": own or {}},
            "spec": {"template": {"metadata": {"labels": pod or {}}}}}  # fmt: skip


def cronjob(pod: dict[str, str]) -> Manifest:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "shop"},
            "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": pod}}}}}}  # fmt: skip


def pod(labels: dict[str, str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "shop", "labels": labels},
    }


DOT, SLASH = "workload-policy.kosmos.io", "workload-policy/kosmos.io"

ROWS = [
    ("pod template labels alone", deployment(pod={"app": "web"}), "by-app"),
    ("workload labels alone", deployment(own={"app": "web"}), "by-app"),
    ("labels are matched per set, never merged", deployment(own={"app": "web"}, pod={"tier": "db"}), "by-app"),
    ("CronJob's pod template", cronjob({"tier": "db"}), "by-tier"),
    ("a Pod is its own template", pod({"tier": "db"}), "by-tier"),
    ("no match", deployment(own={"app": "api"}, pod={"app": "api"}), None),
    ("Deployment label workload-policy.kosmos.io", deployment(own={DOT: "named", "app": "web"}), "named"),
    ("pod label workload-policy/kosmos.io", deployment(pod={SLASH: "named", "app": "web"}), "named"),
    ("pod label workload-policy.kosmos.io", deployment(pod={DOT: "named"}), "named"),
    ("workload label workload-policy/kosmos.io", deployment(own={SLASH: "named"}), "named"),
    ("the workload's label before the pod template's", deployment(own={SLASH: "named-too"}, pod={DOT: "named"}), "named-too"),
    ("the dot form before the slash form", deployment(own={SLASH: "named-too", DOT: "named"}), "named"),
    ("a name that does not exist falls back to the selector", deployment(own={DOT: "missing"}, pod={"app": "web"}), "by-app"),
]  # fmt: skip


@pytest.mark.parametrize(("template", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_which_policy_governs(template: Manifest, expected: str | None) -> None:
    policy = planner.workload_policy_for(template, POLICIES)
    assert (policy.metadata.name if policy is not None else None) == expected
    if policy is not None:
        assert policy.metadata.namespace == "shop"


def test_the_key_names_policy_and_generation() -> None:
    policy = planner.workload_policy_for(deployment(pod={"app": "web"}), [{**POLICIES[0], "metadata": {
        **POLICIES[0]["metadata"], "generation": 4}}])  # fmt: skip
    assert planner.workload_policy_key(policy) == "by-app/4"
    assert planner.workload_policy_key(None) == ""


def test_templates_without_pods_or_malformed_have_no_pod_labels() -> None:
    assert pod_template_labels({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}) is None
    assert pod_template_labels({"kind": "Deployment", "spec": {"template": "oops"}}) is None
    assert (
        pod_template_labels({"kind": "Deployment", "spec": {"template": {"metadata": {"labels": {"a": 1}}}}})
        == {}
    )
