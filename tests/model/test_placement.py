import pytest

from federation.model.placement import (
    ClusterAffinity,
    Placement,
    SpreadConstraint,
    Taint,
    Toleration,
    untolerated_taints,
)


def placement(**replica_scheduling):
    data = {"replicaScheduling": replica_scheduling} if replica_scheduling else {}
    return Placement.model_validate(data)


@pytest.mark.parametrize(
    ("replica_scheduling", "type_", "preference", "strategy"),
    [
        (None, "Duplicated", None, "Duplicated"),
        ({"replicaSchedulingType": "Duplicated"}, "Duplicated", None, "Duplicated"),
        ({}, "Divided", "Weighted", "StaticWeight"),
        ({"replicaSchedulingType": "Divided"}, "Divided", "Weighted", "StaticWeight"),
        ({"replicaDivisionPreference": "Aggregated"}, "Divided", "Aggregated", "Aggregated"),
        (
            {
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            },
            "Divided",
            "Weighted",
            "DynamicWeight",
        ),
        (
            {
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {
                    "staticWeightList": [{"targetCluster": {"clusterNames": ["m1"]}, "weight": 1}],
                    "dynamicWeight": "AvailableReplicas",
                },
            },
            "Divided",
            "Weighted",
            "DynamicWeight",
        ),
    ],
)
def test_strategy_selection_follows_karmada(replica_scheduling, type_, preference, strategy):
    data = {} if replica_scheduling is None else {"replicaScheduling": replica_scheduling}
    p = Placement.model_validate(data)
    assert p.replica_scheduling_type() == type_
    assert p.division_preference() == preference
    assert p.strategy() == strategy


def test_static_weights_none_means_equal_weights():
    assert placement(replicaSchedulingType="Divided").static_weights() is None
    assert placement(weightPreference={"dynamicWeight": "AvailableReplicas"}).static_weights() == ()


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        ({"operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoExecute"}, True),
        (
            {"key": "k", "operator": "Equal", "value": "v"},
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            True,
        ),
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"key": "k"}, {"key": "k", "effect": "NoSchedule"}, True),
        (
            {"key": "k", "operator": "Exists", "effect": "NoExecute"},
            {"key": "k", "effect": "NoSchedule"},
            False,
        ),
        ({"key": "j", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
    ],
)
def test_toleration_semantics(toleration, taint, tolerated):
    assert Toleration.model_validate(toleration).tolerates(Taint.model_validate(taint)) is tolerated


def test_untolerated_taints_ignores_prefer_no_schedule():
    taints = [
        Taint(key="a", effect="PreferNoSchedule"),
        Taint(key="b", value="x", effect="NoSchedule"),
        Taint(key="c", effect="NoExecute"),
    ]
    left = untolerated_taints(taints, [Toleration(key="c", operator="Exists")])
    assert [str(t) for t in left] == ["b=x:NoSchedule"]


@pytest.mark.parametrize(
    ("affinity", "name", "kwargs", "expected"),
    [
        ({}, "m1", {}, True),
        ({"clusterNames": ["m1"]}, "m2", {}, False),
        ({"exclude": ["m1"], "clusterNames": ["m1"]}, "m1", {}, False),
        ({"labelSelector": {"matchLabels": {"env": "prod"}}}, "m1", {"labels": {"env": "prod"}}, True),
        (
            {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}},
            "m1",
            {"region": "r1"},
            True,
        ),
        (
            {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}},
            "m1",
            {},
            False,
        ),
        (
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "provider", "operator": "NotIn", "values": ["aws"]}]
                }
            },
            "m1",
            {},
            True,
        ),
        (
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}},
            "m1",
            {"zones": ["z1", "z2"]},
            True,
        ),
        (
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z2"]}]}},
            "m1",
            {"zones": ["z1", "z2"]},
            False,
        ),
        (
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z2"]}]}},
            "m1",
            {},
            True,
        ),
    ],
)
def test_cluster_affinity_matches(affinity, name, kwargs, expected):
    labels = kwargs.pop("labels", {})
    assert ClusterAffinity.model_validate(affinity).matches_cluster(name, labels, **kwargs) is expected


def test_spread_constraint_defaults():
    assert SpreadConstraint().effective_field() == "cluster"
    assert SpreadConstraint(spread_by_label="rack").effective_field() == ""
    assert SpreadConstraint(min_groups=0).effective_min_groups() == 1


def test_affinity_terms_and_round_trip():
    raw = {"clusterAffinity": {"clusterNames": ["m1"], "exclude": ["m2"]}, "futureField": {"x": 1}}
    p = Placement.model_validate(raw)
    assert [t.cluster_names for t in p.affinity_terms()] == [("m1",)]
    assert p.dump() == raw  # unknown fields survive, nothing is defaulted in


def test_frozen_json_is_the_models_json_made_once_per_object(monkeypatch: pytest.MonkeyPatch) -> None:
    from federation.model import base

    first = placement(replicaSchedulingType="Divided")
    equal = placement(replicaSchedulingType="Divided")
    assert base.frozen_json(first) == first.model_dump_json() == base.frozen_json(equal)
    calls = []
    original = Placement.model_dump_json
    monkeypatch.setattr(Placement, "model_dump_json", lambda self, **kw: calls.append(self) or original(self))
    assert base.frozen_json(first) == original(first)
    assert calls == []  # remembered for this object
    other = placement(replicaSchedulingType="Duplicated")
    assert base.frozen_json(other) == original(other)
    assert calls == [other]


def test_frozen_json_is_bounded() -> None:
    from federation.model import base

    kept = [placement(replicaSchedulingType="Divided") for _ in range(base.JSON_CACHE_LIMIT + 5)]
    for model in kept:
        base.frozen_json(model)
    assert len(base._JSON_OF) <= base.JSON_CACHE_LIMIT
