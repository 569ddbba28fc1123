"""ClusterTaintPolicy evaluation, as Karmada's clustertaintpolicy_controller does it (semantics §3.4)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.model.taintpolicy import ClusterTaintPolicySpec, default_policies, planned_taints

DEFAULTS = [ClusterTaintPolicySpec.model_validate(p["spec"]) for p in default_policies()]
NOT_READY = {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}
UNREACHABLE = {"key": "cluster.karmada.io/unreachable", "effect": "NoExecute"}


def cluster(ready: str | None, taints: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": "member1", **meta},
        "spec": {"taints": taints or [], "region": "r1"},
        "status": {"conditions": conditions},
    }


def stamped(taint: dict[str, Any], at: str = "NOW") -> dict[str, Any]:
    return {**taint, "timeAdded": at}


CASES = {
    "Ready=False adds not-ready": (cluster("False"), [stamped(NOT_READY)]),
    "Ready=Unknown adds unreachable": (cluster("Unknown"), [stamped(UNREACHABLE)]),
    "Ready=True adds nothing": (cluster("True"), []),
    "Ready=True removes both": (cluster("True", [stamped(NOT_READY, "T0"), stamped(UNREACHABLE, "T0")]), []),
    "existing taint keeps its timeAdded": (
        cluster("False", [stamped(NOT_READY, "T0")]),
        [stamped(NOT_READY, "T0")],
    ),
    "False→Unknown keeps not-ready, adds unreachable": (
        cluster("Unknown", [stamped(NOT_READY, "T0")]),
        [stamped(NOT_READY, "T0"), stamped(UNREACHABLE)],
    ),
    "no Ready condition: In and NotIn are both false": (cluster(None), []),
    "other taints are left alone": (
        cluster("True", [{"key": "user", "effect": "NoSchedule"}]),
        [{"key": "user", "effect": "NoSchedule"}],
    ),
}


@pytest.mark.parametrize(("given", "expected"), CASES.values(), ids=list(CASES))
def test_default_policies(given: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert planned_taints(given, DEFAULTS, "NOW") == expected


def policy(**spec: Any) -> ClusterTaintPolicySpec:
    body = {"taints": [{"key": "k", "effect": "NoExecute", "value": "v"}], **spec}
    return ClusterTaintPolicySpec.model_validate(body)


def test_not_in_operator_and_target_clusters() -> None:
    down = policy(addOnConditions=[{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}])
    assert planned_taints(cluster("False"), [down], "NOW") == [
        {"key": "k", "effect": "NoExecute", "timeAdded": "NOW", "value": "v"}
    ]
    elsewhere = policy(
        targetClusters={"clusterNames": ["member2"]},
        addOnConditions=[{"conditionType": "Ready", "operator": "In", "statusValues": ["False"]}],
    )
    assert planned_taints(cluster("False"), [elsewhere], "NOW") == []
    by_region = policy(
        targetClusters={
            "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}
        },
        addOnConditions=[{"conditionType": "Ready", "operator": "In", "statusValues": ["False"]}],
    )
    assert len(planned_taints(cluster("False"), [by_region], "NOW")) == 1


def test_empty_condition_lists_never_match() -> None:
    assert planned_taints(cluster("False"), [policy(addOnConditions=[])], "NOW") == []
    assert (
        planned_taints(cluster("True", [stamped({"key": "k", "effect": "NoExecute"})]), [policy()], "NOW")
        != []
    )


def test_a_policy_needs_at_least_one_taint() -> None:
    with pytest.raises(ValueError):
        ClusterTaintPolicySpec.model_validate({"taints": []})


def test_admission_of_cluster_taint_policies() -> None:
    from federation.model.kinds import by_gvk
    from federation.model.validation import validate_object

    info = by_gvk("policy.karmada.io/v1alpha1", "ClusterTaintPolicy")
    assert info is not None and not info.namespaced
    assert all(validate_object(p, info) == [] for p in default_policies())
    bad = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterTaintPolicy",
        "metadata": {"name": "x"},
        "spec": {
            "taints": [{"key": "a", "effect": "NoExecute"}, {"key": "a", "effect": "NoExecute"}],
            "addOnConditions": [{"conditionType": "Ready", "operator": "Foo", "statusValues": ["False"]}],
        },
    }
    assert {e.field for e in validate_object(bad, info)} == {
        "spec.addOnConditions[0].operator",
        "spec.taints[1]",
    }
    never = {**bad, "spec": {"taints": [{"key": "a", "effect": "NoExecute"}]}}
    assert [e.field for e in validate_object(never, info)] == ["spec.addOnConditions"]
