"""The Kosmos scheduler article's own manifests (tests/scheduling/manifests/kosmos-workloadpolicy-article.yaml)
planned end to end: detection picks the policy the way Kosmos binds it, the engine places the counts.

Clusters play the article's nodes: ``workload-test: host`` / ``workload-test: member`` labels, 10 pods each,
plus one unlabelled ``edge`` cluster. Each row changes one thing of the article's manifests and says what
the ResourceBinding must be.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.model.validation import validate_object
from federation.model.workloadpolicy import WorkloadPolicy
from federation.scheduling.offline import plan_manifests

NOW = datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC)
ARTICLE = Path(__file__).parent / "manifests" / "kosmos-workloadpolicy-article.yaml"
DEPLOYMENT, TEST_PLAN_POLICY, DESIGN_POLICY = yaml.safe_load_all(ARTICLE.read_text())
KEY = "workload-test"
APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]
DIVIDED = {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}  # fmt: skip
Manifest = dict[str, Any]


def cluster(name: str, value: str | None, pods: int = 10) -> Manifest:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name, "labels": {KEY: value} if value else {}},
        "spec": {"syncMode": "Push"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "apiEnablements": APIS,
                   "resourceSummary": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": str(pods)}}},
    }  # fmt: skip


FOUR = [
    cluster("host-1", "host"),
    cluster("host-2", "host"),
    cluster("member-1", "member"),
    cluster("edge", None),
]


def propagation(placement: Manifest) -> Manifest:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "floater", "namespace": "workload-test"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}], "placement": placement},
    }  # fmt: skip


def edited(base: Manifest, change: Callable[[Manifest], None] | None = None) -> Manifest:
    out = copy.deepcopy(base)
    if change is not None:
        change(out)
    return out


def spec_set(**values: Any) -> Callable[[Manifest], None]:
    return lambda policy: policy["spec"].update(values)


def pod_labels(labels: dict[str, str]) -> Callable[[Manifest], None]:
    def change(deployment: Manifest) -> None:
        deployment["spec"]["template"]["metadata"]["labels"] = labels

    return change


def own_labels(labels: dict[str, str], pod: dict[str, str] | None = None) -> Callable[[Manifest], None]:
    def change(deployment: Manifest) -> None:
        deployment["metadata"]["labels"] = labels
        if pod is not None:
            deployment["spec"]["template"]["metadata"]["labels"] = pod

    return change


APP = {"app": "clusterlink-floater-mix"}
REQUIRED_4_OF_6 = "4/6 replicas placed, 2 unplaced: WorkloadPolicy Required: 2 beyond what the quotas on workload-test leave (member 1, host 3)."
SUCCESS = "Binding has been scheduled successfully."

# id, deployment change, policy, placement, clusters, expected clusters, reason, message (exact or suffix)
ROWS: list[tuple[str, Any, Manifest, Manifest, list[Manifest], dict[str, int], str, str]] = [
    ("article test plan: pod-template labels, Required Fill",
     None, TEST_PLAN_POLICY, DIVIDED, FOUR, {"member-1": 1, "host-1": 3}, "Success", f"{SUCCESS} {REQUIRED_4_OF_6}"),
    ("the article's spelling 'require'",
     None, edited(TEST_PLAN_POLICY, spec_set(allocationType="require")), DIVIDED, FOUR,
     {"member-1": 1, "host-1": 3}, "Success", f"{SUCCESS} {REQUIRED_4_OF_6}"),
    ("Preferred: the rest goes outside the quota values",
     None, edited(TEST_PLAN_POLICY, spec_set(allocationType="Preferred")), DIVIDED, FOUR,
     {"member-1": 1, "host-1": 3, "edge": 2}, "Success", SUCCESS),
    ("design-details policy: named by the pod label, scheduleStrategy Fill, Preferred by default",
     None, DESIGN_POLICY, DIVIDED, FOUR, {"member-1": 2, "host-1": 3, "edge": 1}, "Success", SUCCESS),
    ("selected by the pod template's labels alone (no binding label)",
     pod_labels(APP), TEST_PLAN_POLICY, DIVIDED, FOUR, {"member-1": 1, "host-1": 3}, "Success",
     f"{SUCCESS} {REQUIRED_4_OF_6}"),
    ("selected by the workload's own labels",
     own_labels(APP, pod={"tier": "x"}), TEST_PLAN_POLICY, DIVIDED, FOUR, {"member-1": 1, "host-1": 3}, "Success",
     f"{SUCCESS} {REQUIRED_4_OF_6}"),
    ("bound by the Deployment label workload-policy.kosmos.io, selector not matching",
     own_labels({"workload-policy.kosmos.io": "workload-policy-test"}, pod={"tier": "x"}),
     TEST_PLAN_POLICY, DIVIDED, FOUR, {"member-1": 1, "host-1": 3}, "Success", f"{SUCCESS} {REQUIRED_4_OF_6}"),
    ("Duplicated placement: the counts still apply",
     None, TEST_PLAN_POLICY, {}, FOUR, {"member-1": 1, "host-1": 3}, "Success", f"{SUCCESS} {REQUIRED_4_OF_6}"),
    ("Preferred short of capacity: what fits is placed",
     None, edited(TEST_PLAN_POLICY, spec_set(allocationType="Preferred")), DIVIDED,
     [cluster("host-1", "host", pods=1), cluster("member-1", "member", pods=1)], {"member-1": 1, "host-1": 1},
     "Success", f"{SUCCESS} 2/6 replicas placed, 4 unplaced: WorkloadPolicy Preferred on workload-test: the "
     "feasible clusters had room for only 2."),
    ("Required short of capacity inside a value",
     None, TEST_PLAN_POLICY, DIVIDED, [cluster("host-1", "host", pods=2), cluster("member-1", "member")],
     {"member-1": 1, "host-1": 2}, "Success",
     f"{SUCCESS} 3/6 replicas placed, 3 unplaced: WorkloadPolicy Required: 2 beyond what the quotas on "
     "workload-test leave (member 1, host 3); topology values short of room: host (2 of 3 placed)."),
    ("no candidate has a quota value: Unschedulable (kept, retried), as Karmada when capacity is short",
     None, TEST_PLAN_POLICY, DIVIDED, [cluster("edge", None)], {}, "Unschedulable",
     "0/6 replicas placed, 6 unplaced: WorkloadPolicy Required: 2 beyond what the quotas on workload-test leave "
     "(member 1, host 3); topology values short of room: member (no candidate cluster), host (no candidate "
     "cluster)."),
]  # fmt: skip


def plan(deployment: Manifest, policy: Manifest, placement: Manifest, clusters: list[Manifest]) -> Manifest:
    [binding] = plan_manifests([deployment, policy, propagation(placement)], clusters, now=NOW)
    return binding


def scheduled(binding: Manifest) -> Manifest:
    return next(c for c in binding["status"]["conditions"] if c["type"] == "Scheduled")


@pytest.mark.parametrize(
    ("change", "policy", "placement", "clusters", "expected", "reason", "message"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_article_manifests(
    change: Any,
    policy: Manifest,
    placement: Manifest,
    clusters: list[Manifest],
    expected: dict[str, int],
    reason: str,
    message: str,
) -> None:
    binding = plan(edited(DEPLOYMENT, change), policy, placement, clusters)
    placed = {c["name"]: c.get("replicas", 0) for c in binding["spec"].get("clusters") or []}
    assert placed == expected
    condition = scheduled(binding)
    assert (condition["reason"], condition["message"]) == (reason, message)
    assert binding["status"]["schedulingExplanation"]["division"]["strategy"] == "WorkloadPolicy"
    if reason == "Success":  # the policy (name/generation) the placement followed is recorded with it
        assert (
            binding["metadata"]["annotations"]["kosmos.io/applied-workload-policy"]
            == "workload-policy-test/0"
        )


def test_balance_spreads_a_value_evenly() -> None:
    policy = edited(TEST_PLAN_POLICY, spec_set(allocationMethod="Balance"))
    binding = plan(DEPLOYMENT, policy, DIVIDED, FOUR)
    placed = {c["name"]: c["replicas"] for c in binding["spec"]["clusters"]}
    assert placed["member-1"] == 1 and sorted([placed["host-1"], placed["host-2"]]) == [1, 2]
    assert "edge" not in placed


def test_no_label_and_no_match_is_plain_karmada() -> None:
    deployment = edited(DEPLOYMENT, pod_labels({"app": "something-else"}))
    binding = plan(deployment, TEST_PLAN_POLICY, DIVIDED, FOUR)
    assert sum(c["replicas"] for c in binding["spec"]["clusters"]) == 6
    assert binding["status"]["schedulingExplanation"]["division"]["strategy"] != "WorkloadPolicy"
    assert binding["metadata"]["annotations"]["kosmos.io/applied-workload-policy"] == ""


@pytest.mark.parametrize("spelling", ["Required", "required", "require", "REQUIRE"])
def test_required_spellings_are_admitted_as_required(spelling: str) -> None:
    policy = edited(TEST_PLAN_POLICY, spec_set(allocationType=spelling))
    assert validate_object(policy) == []
    assert WorkloadPolicy.model_validate(policy).spec.effective_type() == "Required"


@pytest.mark.parametrize("spelling", [None, "", "Preferred", "preferred"])
def test_preferred_spellings_and_the_default(spelling: str | None) -> None:
    policy = edited(TEST_PLAN_POLICY, spec_set(allocationType=spelling))
    if spelling is None:
        del policy["spec"]["allocationType"]
    assert validate_object(policy) == []
    assert WorkloadPolicy.model_validate(policy).spec.effective_type() == "Preferred"


def test_unknown_allocation_values_are_refused_naming_the_field() -> None:
    bad_type = edited(TEST_PLAN_POLICY, spec_set(allocationType="Sometimes"))
    [error] = validate_object(bad_type)
    assert error.field == "spec.allocationType" and '"Required"' in error.message
    bad_strategy = edited(DESIGN_POLICY, spec_set(scheduleStrategy="Scatter"))
    [error] = validate_object(bad_strategy)
    assert error.field == "spec.scheduleStrategy"


def test_allocation_method_wins_over_schedule_strategy() -> None:
    both = edited(DESIGN_POLICY, spec_set(allocationMethod="Balance"))
    assert WorkloadPolicy.model_validate(both).spec.effective_method() == "Balance"
    assert WorkloadPolicy.model_validate(DESIGN_POLICY).spec.effective_method() == "Fill"
