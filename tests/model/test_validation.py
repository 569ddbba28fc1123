"""Each admission rule rejects with the exact field path; every bad field is reported."""

import copy

import pytest

from federation.model.cluster import Cluster
from federation.model.kinds import lookup
from federation.model.meta import ValidationFailed
from federation.model.validation import loc_to_path, parse_object, validate_object, validate_update


def make_pp(spec=None, **placement):
    base = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
            "placement": placement,
        },
    }
    base["spec"].update(spec or {})
    return base


def make_cluster(spec=None, status=None, name="member1"):
    manifest = {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://10.0.0.1:6443", **(spec or {})},
    }
    if status is not None:
        manifest["status"] = status
    return manifest


def make_rebalancer(**spec):
    return {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo"},
        "spec": {
            "workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "a", "namespace": "ns"}],
            **spec,
        },
    }


def make_wlp(**spec):
    return {
        "apiVersion": "kosmos.io/v1alpha1",
        "kind": "WorkloadPolicy",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "topologyKey": "zone",
            "labelSelector": {"matchLabels": {"app": "x"}},
            "allocationPolicy": [{"name": "a", "replicas": 1}],
            **spec,
        },
    }


def fields(manifest):
    return [(e.field, e.reason) for e in validate_object(manifest)]


def one(manifest):
    errors = validate_object(manifest)
    assert len(errors) == 1, errors
    return errors[0].field, errors[0].reason


INVALID, REQUIRED, UNSUPPORTED, DUPLICATE = (
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueNotSupported",
    "FieldValueDuplicate",
)
SC = "spec.placement.spreadConstraints"
TOL = "spec.placement.clusterTolerations"
AFF = "spec.placement.clusterAffinities"
FIELD_EXPR = {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r"]}]}}

PP_CASES = [
    ("empty resourceSelectors", make_pp({"resourceSelectors": []}), "spec.resourceSelectors", REQUIRED),
    (
        "preemption Always needs names",
        make_pp(
            {"preemption": "Always", "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}
        ),
        "spec.resourceSelectors[0].name",
        INVALID,
    ),
    (
        "selector label operator",
        make_pp(
            {
                "resourceSelectors": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Equals"}]},
                    }
                ]
            }
        ),
        "spec.resourceSelectors[0].labelSelector.matchExpressions[0].operator",
        UNSUPPORTED,
    ),
    (
        "application failover needs propagateDeps",
        make_pp({"failover": {"application": {"decisionConditions": {}}}}),
        "spec.propagateDeps",
        INVALID,
    ),
    (
        "negative tolerationSeconds",
        make_pp(
            {
                "propagateDeps": True,
                "failover": {"application": {"decisionConditions": {"tolerationSeconds": -1}}},
            }
        ),
        "spec.failover.application.decisionConditions.tolerationSeconds",
        INVALID,
    ),
    (
        "gracePeriodSeconds only with Gracefully",
        make_pp(
            {
                "propagateDeps": True,
                "failover": {
                    "application": {"decisionConditions": {}, "purgeMode": "Never", "gracePeriodSeconds": 9}
                },
            }
        ),
        "spec.failover.application.gracePeriodSeconds",
        INVALID,
    ),
    (
        "gracePeriodSeconds positive",
        make_pp(
            {
                "propagateDeps": True,
                "failover": {"application": {"decisionConditions": {}, "gracePeriodSeconds": 0}},
            }
        ),
        "spec.failover.application.gracePeriodSeconds",
        INVALID,
    ),
    (
        "purgeMode values",
        make_pp(
            {
                "propagateDeps": True,
                "failover": {"application": {"decisionConditions": {}, "purgeMode": "Later"}},
            }
        ),
        "spec.failover.application.purgeMode",
        UNSUPPORTED,
    ),
    (
        "suspension conflict",
        make_pp({"suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["m1"]}}}),
        "spec.suspension",
        INVALID,
    ),
    ("priority is int32", make_pp({"priority": "high"}), "spec.priority", INVALID),
    (
        "conflictResolution values",
        make_pp({"conflictResolution": "Merge"}),
        "spec.conflictResolution",
        UNSUPPORTED,
    ),
    (
        "clusterAffinity xor clusterAffinities",
        make_pp(clusterAffinity={"clusterNames": ["m1"]}, clusterAffinities=[{"affinityName": "g1"}]),
        "spec.placement",
        INVALID,
    ),
    (
        "fieldSelector key",
        make_pp(
            clusterAffinity={
                "fieldSelector": {"matchExpressions": [{"key": "name", "operator": "In", "values": ["x"]}]}
            }
        ),
        "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key",
        UNSUPPORTED,
    ),
    (
        "fieldSelector operator",
        make_pp(
            clusterAffinity={"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}
        ),
        "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].operator",
        UNSUPPORTED,
    ),
    (
        "affinityName unique",
        make_pp(clusterAffinities=[{"affinityName": "g1"}, {"affinityName": "g1"}]),
        f"{AFF}[1].affinityName",
        DUPLICATE,
    ),
    (
        "affinityName syntax",
        make_pp(clusterAffinities=[{"affinityName": "bad name"}]),
        f"{AFF}[0].affinityName",
        INVALID,
    ),
    (
        "affinityName length",
        make_pp(clusterAffinities=[{"affinityName": "a" * 33}]),
        f"{AFF}[0].affinityName",
        INVALID,
    ),
    (
        "overflow needs dynamic or aggregated",
        make_pp(
            clusterAffinities=[
                {"affinityName": "p", "clusterNames": ["m1"], "overflowAffinities": [{"affinityName": "o"}]}
            ]
        ),
        f"{AFF}[0].overflowAffinities",
        INVALID,
    ),
    (
        "overflow needs an inline affinity",
        make_pp(
            clusterAffinities=[{"affinityName": "p", "overflowAffinities": [{"affinityName": "o"}]}],
            replicaScheduling={"replicaDivisionPreference": "Aggregated"},
        ),
        f"{AFF}[0]",
        INVALID,
    ),
    (
        "overflow names unique",
        make_pp(
            clusterAffinities=[
                {"affinityName": "p", **FIELD_EXPR, "overflowAffinities": [{"affinityName": "p"}]}
            ],
            replicaScheduling={"replicaDivisionPreference": "Aggregated"},
        ),
        f"{AFF}[0].overflowAffinities[0].affinityName",
        DUPLICATE,
    ),
    (
        "maxGroups >= minGroups",
        make_pp(spreadConstraints=[{"maxGroups": 1, "minGroups": 2}]),
        f"{SC}[0].maxGroups",
        INVALID,
    ),
    ("minGroups >= 0", make_pp(spreadConstraints=[{"minGroups": -1}]), f"{SC}[0].minGroups", INVALID),
    ("maxGroups >= 0", make_pp(spreadConstraints=[{"maxGroups": -1}]), f"{SC}[0].maxGroups", INVALID),
    (
        "spreadByField xor spreadByLabel",
        make_pp(spreadConstraints=[{"spreadByField": "cluster", "spreadByLabel": "rack"}]),
        f"{SC}[0].spreadByLabel",
        INVALID,
    ),
    (
        "spreadByField values",
        make_pp(spreadConstraints=[{"spreadByField": "rack"}]),
        f"{SC}[0].spreadByField",
        UNSUPPORTED,
    ),
    (
        "one constraint per field",
        make_pp(
            spreadConstraints=[{"spreadByField": "cluster"}, {"spreadByField": "cluster", "maxGroups": 2}]
        ),
        f"{SC}[1].spreadByField",
        DUPLICATE,
    ),
    (
        "a cluster constraint is required",
        make_pp(spreadConstraints=[{"spreadByField": "region"}]),
        SC,
        INVALID,
    ),
    (
        "Exists takes no value",
        make_pp(clusterTolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        f"{TOL}[0].value",
        INVALID,
    ),
    (
        "operator values",
        make_pp(clusterTolerations=[{"key": "k", "operator": "Lt"}]),
        f"{TOL}[0].operator",
        UNSUPPORTED,
    ),
    (
        "effect values",
        make_pp(clusterTolerations=[{"key": "k", "effect": "Evict"}]),
        f"{TOL}[0].effect",
        UNSUPPORTED,
    ),
    (
        "tolerationSeconds needs NoExecute",
        make_pp(clusterTolerations=[{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]),
        f"{TOL}[0].effect",
        INVALID,
    ),
    (
        "empty key needs Exists",
        make_pp(clusterTolerations=[{"operator": "Equal"}]),
        f"{TOL}[0].operator",
        INVALID,
    ),
    (
        "toleration key syntax",
        make_pp(clusterTolerations=[{"key": "a b", "operator": "Exists"}]),
        f"{TOL}[0].key",
        INVALID,
    ),
    (
        "static weight >= 1",
        make_pp(
            replicaScheduling={
                "replicaSchedulingType": "Divided",
                "weightPreference": {
                    "staticWeightList": [{"targetCluster": {"clusterNames": ["m1"]}, "weight": 0}]
                },
            }
        ),
        "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
        INVALID,
    ),
    (
        "replicaSchedulingType values",
        make_pp(replicaScheduling={"replicaSchedulingType": "Split"}),
        "spec.placement.replicaScheduling.replicaSchedulingType",
        UNSUPPORTED,
    ),
    (
        "dynamicWeight values",
        make_pp(replicaScheduling={"weightPreference": {"dynamicWeight": "Cpu"}}),
        "spec.placement.replicaScheduling.weightPreference.dynamicWeight",
        UNSUPPORTED,
    ),
]


@pytest.mark.parametrize(
    ("manifest", "field", "reason"), [c[1:] for c in PP_CASES], ids=[c[0] for c in PP_CASES]
)
def test_propagation_policy_rules(manifest, field, reason):
    assert one(manifest) == (field, reason)


def test_missing_resource_selectors_is_required():
    manifest = make_pp()
    del manifest["spec"]["resourceSelectors"]
    assert one(manifest) == ("spec.resourceSelectors", REQUIRED)


def test_rules_apply_to_cluster_propagation_policies_too():
    manifest = make_pp(spreadConstraints=[{"maxGroups": 1, "minGroups": 2}])
    manifest["kind"] = "ClusterPropagationPolicy"
    del manifest["metadata"]["namespace"]
    assert one(manifest) == (f"{SC}[0].maxGroups", INVALID)


@pytest.mark.parametrize(
    "placement",
    [
        {
            "spreadConstraints": [{"spreadByField": "region", "maxGroups": 2}, {"maxGroups": 3}]
        },  # unset field = cluster
        {"spreadConstraints": [{"spreadByLabel": "rack"}]},
        {"spreadConstraints": [{"maxGroups": 2}]},  # minGroups defaults to 1
        {"clusterTolerations": [{"operator": "Exists"}]},
        {"clusterTolerations": [{"key": "k", "effect": "NoExecute", "tolerationSeconds": 0}]},
        {"clusterAffinities": [{"affinityName": "a"}, {"affinityName": "b", "exclude": ["m1"]}]},
    ],
)
def test_valid_placements(placement):
    assert validate_object(make_pp(**placement)) == []


def test_three_bad_fields_are_all_reported():
    manifest = make_pp(
        {"conflictResolution": "Merge"},
        spreadConstraints=[{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 3}],
        clusterTolerations=[{"key": "k", "operator": "Exists", "value": "v"}],
    )
    assert fields(manifest) == [
        ("spec.conflictResolution", UNSUPPORTED),
        (f"{SC}[0].maxGroups", INVALID),
        (f"{TOL}[0].value", INVALID),
    ]
    with pytest.raises(ValidationFailed) as info:
        parse_object(manifest)
    assert len(info.value.errors) == 3
    assert str(info.value).startswith(
        'PropagationPolicy "nginx" is invalid: [spec.conflictResolution: Unsupported'
    )


# --- metadata ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "field", "reason"),
    [
        ({"namespace": "default"}, "metadata.name", REQUIRED),
        ({"name": "Nginx", "namespace": "default"}, "metadata.name", INVALID),
        ({"name": "nginx"}, "metadata.namespace", REQUIRED),
        ({"name": "nginx", "namespace": "Default"}, "metadata.namespace", INVALID),
        (
            {"name": "nginx", "namespace": "default", "labels": {"app": "-x-"}},
            "metadata.labels[app]",
            INVALID,
        ),
        ({"name": "nginx", "namespace": "default", "labels": {"bad key": "x"}}, "metadata.labels", INVALID),
        (
            {"name": "nginx", "namespace": "default", "annotations": {"a": 1}},
            "metadata.annotations[a]",
            INVALID,
        ),
    ],
)
def test_metadata_rules(metadata, field, reason):
    manifest = make_pp()
    manifest["metadata"] = metadata
    assert one(manifest) == (field, reason)


def test_generate_name_is_enough():
    manifest = make_pp()
    manifest["metadata"] = {"generateName": "nginx-", "namespace": "default"}
    assert validate_object(manifest) == []


def test_unregistered_templates_get_metadata_checks_only():
    # A CRD's kind (or an unregistered version of a built-in one): the member's API server owns its schema.
    for api_version, kind in (("example.com/v1", "Widget"), ("apps/v1beta9", "Deployment")):
        template = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "d"}}
        assert validate_object(template | {"spec": 5}) == []
    # A registered built-in kind gets kube-apiserver's rules (tests/model/test_rules_builtin.py).
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "d"}}
    assert fields(deploy | {"spec": 5}) == [("spec", INVALID)]
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "UPPER"}}
    assert fields(widget) == [("metadata.name", INVALID)]
    assert fields({"kind": "Widget", "metadata": {"name": "w"}}) == [("apiVersion", REQUIRED)]


def test_kind_must_match_the_endpoint():
    # a namespace on a cluster-scoped object is ignored, as the Kubernetes API server does
    assert fields(make_pp() | {"kind": "ClusterPropagationPolicy"}) == []
    assert ("kind", UNSUPPORTED) in fields_with(make_pp() | {"kind": "Deployment"}, lookup("pp"))


def fields_with(manifest, info):
    return [(e.field, e.reason) for e in validate_object(manifest, info)]


# --- Cluster -------------------------------------------------------------------------------------------

MAX = "9223372036854775807"


def models(*grades):
    return [{"grade": i, "ranges": list(r)} for i, r in enumerate(grades)]


CLUSTER_CASES = [
    ("name length", make_cluster(name="m" * 49), "metadata.name", INVALID),
    ("name syntax", make_cluster(name="member.1"), "metadata.name", INVALID),
    ("syncMode values", make_cluster({"syncMode": "Both"}), "spec.syncMode", UNSUPPORTED),
    ("apiEndpoint query", make_cluster({"apiEndpoint": "https://h:6443?x=1"}), "spec.apiEndpoint", INVALID),
    ("apiEndpoint host", make_cluster({"apiEndpoint": "https://"}), "spec.apiEndpoint", INVALID),
    (
        "secretRef name",
        make_cluster({"secretRef": {"namespace": "karmada-cluster"}}),
        "spec.secretRef.name",
        REQUIRED,
    ),
    ("proxyURL scheme", make_cluster({"proxyURL": "ftp://proxy"}), "spec.proxyURL", INVALID),
    (
        "taint effect",
        make_cluster({"taints": [{"key": "k", "effect": "Evict"}]}),
        "spec.taints[0].effect",
        UNSUPPORTED,
    ),
    (
        "taint key",
        make_cluster({"taints": [{"key": "a b", "effect": "NoSchedule"}]}),
        "spec.taints[0].key",
        INVALID,
    ),
    (
        "taints unique by key and effect",
        make_cluster(
            {
                "taints": [
                    {"key": "k", "effect": "NoSchedule"},
                    {"key": "k", "value": "v", "effect": "NoSchedule"},
                ]
            }
        ),
        "spec.taints[1]",
        DUPLICATE,
    ),
    (
        "resource model first min",
        make_cluster({"resourceModels": models([{"name": "cpu", "min": "1", "max": MAX}])}),
        "spec.resourceModels[0].ranges[0].min",
        INVALID,
    ),
    (
        "resource model last max",
        make_cluster({"resourceModels": models([{"name": "cpu", "min": "0", "max": "4"}])}),
        "spec.resourceModels[0].ranges[0].max",
        INVALID,
    ),
    (
        "resource model contiguous",
        make_cluster(
            {
                "resourceModels": models(
                    [{"name": "cpu", "min": "0", "max": "2"}], [{"name": "cpu", "min": "3", "max": MAX}]
                )
            }
        ),
        "spec.resourceModels[1].ranges[0].min",
        INVALID,
    ),
    (
        "resource model names",
        make_cluster({"resourceModels": models([{"name": "gpu", "min": "0", "max": MAX}])}),
        "spec.resourceModels[0].ranges[0].name",
        UNSUPPORTED,
    ),
    (
        "resource model quantity",
        make_cluster({"resourceModels": models([{"name": "cpu", "min": "0", "max": "lots"}])}),
        "spec.resourceModels[0].ranges[0].max",
        INVALID,
    ),
    (
        "resource summary quantity",
        make_cluster(status={"resourceSummary": {"allocatable": {"cpu": "eight"}}}),
        "status.resourceSummary.allocatable[cpu]",
        INVALID,
    ),
    (
        "condition status",
        make_cluster(status={"conditions": [{"type": "Ready", "status": "Yes"}]}),
        "status.conditions[0].status",
        UNSUPPORTED,
    ),
]


@pytest.mark.parametrize(
    ("manifest", "field", "reason"), [c[1:] for c in CLUSTER_CASES], ids=[c[0] for c in CLUSTER_CASES]
)
def test_cluster_rules(manifest, field, reason):
    assert one(manifest) == (field, reason)


def test_cluster_sync_mode_required():
    manifest = make_cluster()
    del manifest["spec"]["syncMode"]
    assert one(manifest) == ("spec.syncMode", REQUIRED)


def test_cluster_ready_status_absent():
    cluster = Cluster.model_validate(make_cluster())
    assert cluster.ready_status() is None and not cluster.is_ready()


# --- WorkloadRebalancer, WorkloadPolicy, bindings, works ---------------------------------------------------

OTHER_CASES = [
    ("rebalancer needs workloads", make_rebalancer(workloads=[]), "spec.workloads", REQUIRED),
    (
        "rebalancer workload name",
        make_rebalancer(workloads=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": ""}]),
        "spec.workloads[0].name",
        REQUIRED,
    ),
    ("rebalancer ttl", make_rebalancer(ttlSecondsAfterFinished=-1), "spec.ttlSecondsAfterFinished", INVALID),
    ("wlp topologyKey", make_wlp(topologyKey="a b"), "spec.topologyKey", INVALID),
    (
        "wlp replicas",
        make_wlp(allocationPolicy=[{"name": "a", "replicas": -1}]),
        "spec.allocationPolicy[0].replicas",
        INVALID,
    ),
    (
        "wlp names unique",
        make_wlp(allocationPolicy=[{"name": "a", "replicas": 1}, {"name": "a", "replicas": 2}]),
        "spec.allocationPolicy[1].name",
        DUPLICATE,
    ),
    ("wlp allocationType", make_wlp(allocationType="Maybe"), "spec.allocationType", UNSUPPORTED),
    ("wlp allocationMethod", make_wlp(allocationMethod="Spill"), "spec.allocationMethod", UNSUPPORTED),
]


@pytest.mark.parametrize(
    ("manifest", "field", "reason"), [c[1:] for c in OTHER_CASES], ids=[c[0] for c in OTHER_CASES]
)
def test_other_rules(manifest, field, reason):
    assert one(manifest) == (field, reason)


def test_wlp_missing_required_fields():
    manifest = make_wlp()
    del manifest["spec"]["topologyKey"], manifest["spec"]["labelSelector"]
    assert fields(manifest) == [("spec.topologyKey", REQUIRED), ("spec.labelSelector", REQUIRED)]


def test_binding_rules():
    rb = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "nginx-deployment", "namespace": "default"},
        "spec": {
            "resource": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "nginx",
                "namespace": "default",
            },
            "clusters": [{"name": "m1", "replicas": 1}, {"name": "m1", "replicas": -2}],
            "gracefulEvictionTasks": [
                {
                    "fromCluster": "m2",
                    "reason": "not camel",
                    "producer": "x",
                    "gracePeriodSeconds": 1,
                    "suppressDeletion": True,
                }
            ],
        },
    }
    assert fields(rb) == [
        ("spec.clusters[1].name", DUPLICATE),
        ("spec.clusters[1].replicas", INVALID),
        ("spec.gracefulEvictionTasks[0].reason", INVALID),
        ("spec.gracefulEvictionTasks[0].suppressDeletion", INVALID),
    ]


def test_work_manifests_must_be_objects():
    work = {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "w", "namespace": "karmada-es-m1"},
        "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap"}, {"kind": "Secret"}]}},
    }
    assert fields(work) == [("spec.workload.manifests[1].apiVersion", REQUIRED)]


def test_rebalancer_spec_may_change_its_identity_may_not():
    old = make_rebalancer()
    new = copy.deepcopy(old)
    assert validate_update(old, new) == []
    new["spec"]["ttlSecondsAfterFinished"] = 5
    new["spec"]["workloads"].append({"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"})
    assert validate_update(old, new) == []  # Karmada's modification rules apply (model/rebalancing)
    renamed = copy.deepcopy(old)
    renamed["metadata"]["name"] = "other"
    assert [e.field for e in validate_update(old, renamed)] == ["metadata.name"]


def test_loc_to_path_uses_aliases_indices_and_map_keys():
    from federation.model.policy import PropagationPolicy

    path, _ = loc_to_path(PropagationPolicy, ("spec", "placement", "clusterTolerations", 1, "operator"))
    assert path == "spec.placement.clusterTolerations[1].operator"
    path, _ = loc_to_path(Cluster, ("status", "resourceSummary", "allocatable", "cpu"))
    assert path == "status.resourceSummary.allocatable[cpu]"
    path, _ = loc_to_path(Cluster, ("spec", "insecureSkipTLSVerification"))
    assert path == "spec.insecureSkipTLSVerification"
