from datetime import UTC, datetime

import pytest

from federation.model.binding import ResourceBinding, binding_name, reschedule_required
from federation.model.meta import FieldError, ValidationFailed, join_path, key_path
from federation.model.policy import (
    PRIORITY_MATCH_ALL,
    PRIORITY_MATCH_LABEL_SELECTOR,
    PRIORITY_MATCH_NAME,
    PRIORITY_MISMATCH,
    ApplicationFailoverBehavior,
    PropagationSpec,
    ResourceSelector,
)
from federation.model.rebalancer import ObjectReference
from federation.model.work import Work, cluster_of_execution_namespace, execution_namespace, work_name


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("nginx", "Deployment", "nginx-deployment"),
        ("system:controller:foo", "ClusterRole", "system.controller.foo-clusterrole"),
        ("MyApp", "StatefulSet", "myapp-statefulset"),
    ],
)
def test_binding_name_matches_karmada(name, kind, expected):
    assert binding_name(name, kind) == expected


def test_execution_namespace_and_work_name():
    assert execution_namespace("member1") == "karmada-es-member1"
    assert cluster_of_execution_namespace("karmada-es-member1") == "member1"
    assert cluster_of_execution_namespace("default") is None
    first = work_name("default", "Nginx", "Deployment")
    assert first == work_name("default", "Nginx", "Deployment")
    assert first.startswith("nginx-")
    assert first != work_name("other", "Nginx", "Deployment") != work_name("", "Nginx", "Deployment")
    assert set(first.removeprefix("nginx-")) <= set("bcdfghjklmnpqrstvwxz2456789")


TEMPLATE = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
}


@pytest.mark.parametrize(
    ("selector", "priority"),
    [
        ({"apiVersion": "apps/v1", "kind": "Deployment"}, PRIORITY_MATCH_ALL),
        ({"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}, PRIORITY_MATCH_NAME),
        ({"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}, PRIORITY_MISMATCH),
        (
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "labelSelector": {"matchLabels": {"app": "nginx"}},
            },
            PRIORITY_MATCH_LABEL_SELECTOR,
        ),
        (
            {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "db"}}},
            PRIORITY_MISMATCH,
        ),
        # a name decides alone: the label selector is ignored when a name is given
        (
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "nginx",
                "labelSelector": {"matchLabels": {"app": "db"}},
            },
            PRIORITY_MATCH_NAME,
        ),
        ({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "prod"}, PRIORITY_MISMATCH),
        ({"apiVersion": "apps/v1", "kind": "StatefulSet"}, PRIORITY_MISMATCH),
        ({"apiVersion": "extensions/v1beta1", "kind": "Deployment"}, PRIORITY_MISMATCH),
    ],
)
def test_resource_selector_matches(selector, priority):
    rs = ResourceSelector.model_validate(selector)
    assert rs.match_priority(TEMPLATE) == priority
    assert rs.matches(TEMPLATE) is (priority != PRIORITY_MISMATCH)


def test_policy_spec_defaults_and_best_match():
    spec = PropagationSpec.model_validate(
        {
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"},
            ]
        }
    )
    assert spec.match_priority(TEMPLATE) == PRIORITY_MATCH_NAME
    assert (spec.effective_priority(), spec.effective_preemption(), spec.effective_conflict_resolution()) == (
        0,
        "Never",
        "Abort",
    )
    assert spec.effective_scheduler_name() == "default-scheduler"
    assert spec.placement.strategy() == "Duplicated"


@pytest.mark.parametrize(
    ("mode", "effective", "grace"),
    [
        (None, "Gracefully", 600),
        ("Graciously", "Gracefully", 600),
        ("Immediately", "Directly", None),
        ("Never", "Never", None),
    ],
)
def test_purge_mode_aliases(mode, effective, grace):
    data = {"decisionConditions": {}} | ({"purgeMode": mode} if mode else {})
    behavior = ApplicationFailoverBehavior.model_validate(data)
    assert behavior.effective_purge_mode() == effective
    assert behavior.effective_grace_period_seconds() == grace
    assert behavior.effective_toleration_seconds() == 300


def make_rb(**spec):
    return ResourceBinding.model_validate(
        {
            "metadata": {"name": "nginx-deployment", "namespace": "default"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}, **spec},
        }
    )


def test_binding_helpers():
    rb = make_rb(replicas=5, clusters=[{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 3}])
    assert rb.spec.is_workload() and rb.spec.assigned_replicas() == 5
    assert not make_rb().spec.is_workload()
    assert make_rb(replicaRequirements={"resourceRequest": {"cpu": "100m"}}).spec.is_workload()
    assert rb.scheduled_condition() is None


def test_reschedule_required():
    t1, t2 = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)
    rb = ResourceBinding.model_validate(
        {
            "metadata": {"name": "x", "namespace": "d"},
            "spec": {
                "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"},
                "rescheduleTriggeredAt": t2.isoformat(),
            },
            "status": {"lastScheduledTime": t1.isoformat()},
        }
    )
    assert rb.reschedule_required()
    assert not reschedule_required(rb.spec, None)


def test_work_helpers():
    work = Work.model_validate(
        {
            "metadata": {"name": "w", "namespace": "karmada-es-m1"},
            "spec": {"workload": {"manifests": [TEMPLATE]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}]},
        }
    )
    assert work.cluster() == "m1" and work.applied() and work.spec.manifests() == (TEMPLATE,)


def test_rebalancer_reference_sort_key():
    ref = ObjectReference(api_version="apps/v1", kind="Deployment", name="a", namespace="ns")
    assert ref.sort_key() == "apps/v1 Deployment ns a"


def test_field_errors():
    assert (
        join_path("spec", "placement", "spreadConstraints", 0, "maxGroups")
        == "spec.placement.spreadConstraints[0].maxGroups"
    )
    assert key_path("metadata.labels", "app") == "metadata.labels[app]"
    assert str(FieldError("spec.x", "Required value", "FieldValueRequired")) == "spec.x: Required value"
    with pytest.raises(ValueError):
        ValidationFailed([])
    failed = ValidationFailed(
        [FieldError("spec.x", "Required value", "FieldValueRequired")], kind="Cluster", name="m1"
    )
    assert str(failed) == 'Cluster "m1" is invalid: spec.x: Required value'
