"""Service-class profiles: the annotation that picks one, the default for everything else, settings → config."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from federation.scheduling import planner
from federation.scheduling.engine import schedule
from federation.scheduling.profiles import SERVICE_CLASS_ANNOTATION, engine_config, service_class_of
from federation.scheduling.types import SCORE_PLUGINS, EngineConfig, Headroom, ServiceProfile
from federation.settings import SchedulerSettings
from tests.scheduling.sched_factories import make_binding, make_cluster


def deployment(own: dict[str, Any] | None = None, pod: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "db", "namespace": "default", "annotations": own or {}},
        "spec": {"replicas": 1, "template": {"metadata": {"annotations": pod or {}}, "spec": {}}},
    }


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (deployment({SERVICE_CLASS_ANNOTATION: "mysql"}), "mysql"),
        (deployment(pod={SERVICE_CLASS_ANNOTATION: "redis"}), "redis"),  # where the original read it
        (deployment({SERVICE_CLASS_ANNOTATION: "pika"}, {SERVICE_CLASS_ANNOTATION: "redis"}), "pika"),
        (deployment({SERVICE_CLASS_ANNOTATION: " mysql "}), "mysql"),
        (deployment({"other": "mysql"}), ""),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, ""),
        (None, ""),
    ],
)
def test_service_class_comes_from_the_workload_then_its_pod_template(
    template: dict[str, Any] | None, expected: str
) -> None:
    assert service_class_of(template) == expected


def test_binding_input_carries_the_service_class() -> None:
    binding = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "db-deployment", "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "db"}, "replicas": 1},
    }
    template = deployment(pod={SERVICE_CLASS_ANNOTATION: "mysql"})
    assert planner.binding_input(binding, template).service_class == "mysql"
    assert planner.binding_input(binding, None).service_class == ""


MYSQL = ServiceProfile(score_weights={"LeastAllocated": 1}, headroom={"memory": Headroom(percent=10)})


def test_a_class_without_a_profile_gets_the_default() -> None:
    config = EngineConfig(score_weights={"ClusterLocality": 2}, profiles={"mysql": MYSQL})
    assert config.profile_for("mysql") is MYSQL
    top = ServiceProfile(score_weights={"ClusterLocality": 2}, headroom={})
    assert config.profile_for("") == top and config.profile_for("postgres") == top
    assert (config.profile_name("mysql"), config.profile_name("postgres")) == ("mysql", "default")
    chosen = EngineConfig(profiles={"mysql": MYSQL}, default_profile="mysql")
    assert chosen.profile_for("postgres") is MYSQL and chosen.profile_name("") == "mysql"


def test_the_explanation_names_the_class_and_the_profile() -> None:
    config = EngineConfig(profiles={"mysql": MYSQL})
    result = schedule(make_binding(1, service_class="mysql"), [make_cluster()], config)
    assert (result.explanation["serviceClass"], result.explanation["profile"]) == ("mysql", "mysql")
    other = schedule(make_binding(1, service_class="mongo"), [make_cluster()], config)
    assert (other.explanation["serviceClass"], other.explanation["profile"]) == ("mongo", "default")
    assert "profile" not in schedule(make_binding(1), [make_cluster()], config).explanation


def test_unknown_score_plugins_and_profiles_are_refused_with_the_valid_names() -> None:
    valid = ", ".join(sorted(SCORE_PLUGINS))
    with pytest.raises(ValueError, match=f"unknown score plugin 'MostFreeMemroy'.*valid: {valid}"):
        EngineConfig(score_weights={"MostFreeMemroy": 1})
    with pytest.raises(ValueError, match=r"profile 'mysql'.*unknown score plugin 'MoreMem'"):
        EngineConfig(profiles={"mysql": ServiceProfile(score_weights={"MoreMem": 1})})
    with pytest.raises(ValueError, match="default_profile 'mysqll' names no profile; defined: mysql"):
        EngineConfig(profiles={"mysql": MYSQL}, default_profile="mysqll")


def test_engine_config_builds_profiles_that_inherit_whole_fields() -> None:
    settings = SchedulerSettings.model_validate(
        {
            "score_weights": {"ClusterLocality": 1, "MostFreeMemory": 3},
            "headroom": {"cpu": {"strict": True, "floor": "500m"}},
            "resource_fit": False,
            "profiles": {
                "mysql": {"score_weights": {"MoreFreeMemoryRatio": 1000000}},
                "redis": {"headroom": {"memory": {"request_factor": 2, "percent": 5, "floor": "1Gi"}}},
            },
            "default_profile": "redis",
        }
    )
    config = engine_config(settings)
    assert not config.resource_fit and config.default_profile == "redis"
    assert config.profile_for("mysql") == ServiceProfile(
        score_weights={"MoreFreeMemoryRatio": 1000000}, headroom={"cpu": Headroom(floor=500, strict=True)}
    )
    assert config.profile_for("redis") == ServiceProfile(
        score_weights={"ClusterLocality": 1, "MostFreeMemory": 3},
        headroom={"memory": Headroom(percent=5, floor=1024**3, request_factor=2)},
    )
    assert config.profile_for("") == config.profile_for("redis")
    assert planner.engine_config(settings) == config  # the name every caller imports


@pytest.mark.parametrize(
    ("rule", "allocatable", "reserve"),
    [
        (Headroom(percent=10), 100, 10),  # free - cost >= 10
        (Headroom(percent=10, strict=True), 100, 11),  # free - cost > 10
        (Headroom(percent=10), 105, 11),  # >= 10.5 needs 11
        (Headroom(percent=10, strict=True), 105, 11),  # > 10.5 needs 11
        (Headroom(percent=10, floor=20, strict=True), 105, 21),
        (Headroom(strict=True), 0, 1),
    ],
)
def test_reserve_is_the_least_integer_that_keeps_the_inequality(
    rule: Headroom, allocatable: int, reserve: int
) -> None:
    assert rule.reserve(allocatable) == reserve


def test_the_profile_of_a_class_without_one_is_made_once_per_config() -> None:
    config = EngineConfig(score_weights={"ClusterLocality": 2}, headroom={"pods": Headroom(floor=1)})
    assert config.profile_for("") is config.profile_for("unknown")
    assert config.profile_for("") == ServiceProfile({"ClusterLocality": 2}, {"pods": Headroom(floor=1)})
    other = replace(config, headroom={})
    assert other.profile_for("").headroom == {}  # made again for the new config's fields
    assert replace(config) == config  # and no part of a config's equality
    assert "unnamed" not in repr(config)
