"""kube-apiserver's rules for built-in kinds, and the int ranges of Karmada's CRDs: input → field + message.

Every case is one bad field in an otherwise valid manifest; the table says which field validation must
name and the message (or its distinctive part) kube-apiserver would have given.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.model.kinds import by_gvk
from federation.model.validation import validate_object
from federation.model.work import work_name
from federation.model.workload import InvalidTemplate, replicas_of, resource_request_of, with_replicas

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"
INVALID, REQUIRED, UNSUPPORTED, DUPLICATE, FORBIDDEN, TOO_LONG = (
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueNotSupported",
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueTooLong",
)
CONTAINER = "spec.template.spec.containers[0]"
CONTAINER_AT = "spec.template.spec.containers.0"  # the same, spelled for at()
POD_TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
}


def deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": copy.deepcopy(POD_TEMPLATE),
            **spec,
        },
    }


def workload(kind: str, **spec: Any) -> dict[str, Any]:
    manifest = deployment(**spec)
    manifest["kind"] = kind
    if kind == "DaemonSet" and "replicas" not in spec:
        del manifest["spec"]["replicas"]
    return manifest


def job(restart: str | None = "Never", **spec: Any) -> dict[str, Any]:
    template = copy.deepcopy(POD_TEMPLATE)
    if restart is not None:
        template["spec"]["restartPolicy"] = restart
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {"template": template, **spec},
    }


def cron_job(**spec: Any) -> dict[str, Any]:
    job_spec = job(restart="OnFailure")["spec"]
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": job_spec}, **spec},
    }


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}], **spec},
    }


def config_map(**body: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"mode": "fast"},
        **body,
    }


def secret(**body: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "default"},
        "data": {"password": "aHVudGVyMg=="},
        **body,
    }


def service(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}], **spec},
    }


def with_resources(manifest: dict[str, Any], resources: Any, key: str = "containers") -> dict[str, Any]:
    pod_spec = manifest["spec"]["template"]["spec"]
    if key == "initContainers":
        pod_spec["initContainers"] = [{"name": "init", "image": "busybox"}]
    pod_spec[key][0]["resources"] = resources
    return manifest


def at(manifest: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """Set a dotted path (list indices as numbers) in a copy of ``manifest``."""
    manifest = copy.deepcopy(manifest)
    *parents, last = dotted.split(".")
    node: Any = manifest
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if last.isdigit() and int(last) == len(node):
        node.append(value)  # one past the end: a new element
    else:
        node[int(last) if last.isdigit() else last] = value
    return manifest


def errors_of(manifest: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e.field, e.message, e.reason) for e in validate_object(manifest)]


VALID = [
    deployment(),
    deployment(replicas=None),
    deployment(replicas=0),
    deployment(replicas=2**31 - 1),
    deployment(strategy={"type": "Recreate"}),
    deployment(strategy={"rollingUpdate": {"maxSurge": "200%", "maxUnavailable": 0}}),
    deployment(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}),
    with_resources(deployment(), {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"cpu": 1}}),
    with_resources(deployment(), {"requests": {"cpu": None}}),
    with_resources(deployment(), {"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": "2"}}),
    with_resources(deployment(), {"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}),
    workload("ReplicaSet"),
    workload("StatefulSet", serviceName="web", podManagementPolicy="Parallel"),
    workload("StatefulSet", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}),
    workload("DaemonSet", updateStrategy={"type": "OnDelete"}),
    job(),
    job(restart="OnFailure", parallelism=3, completions=6, completionMode="Indexed"),
    job(selector={"matchLabels": {"app": "web"}}, manualSelector=True),
    cron_job(),
    cron_job(schedule="@hourly"),
    cron_job(schedule="*/15 9-17 * jan-jun mon-fri"),
    pod(),
    pod(restartPolicy="Never", activeDeadlineSeconds=60),
    config_map(),
    config_map(binaryData={"blob": "AAEC"}, immutable=True),
    secret(),
    secret(stringData={"token": "plain"}, type="Opaque"),
    service(),
    service(clusterIP="None", ports=None),
    service(type="ExternalName", externalName="db.example.com.", ports=None),
    service(ports=[{"name": "http", "port": 80}, {"name": "https", "port": 443, "targetPort": "https"}]),
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:view"},
    },
]


@pytest.mark.parametrize("manifest", VALID, ids=lambda m: f"{m['kind']}")
def test_valid_builtin_manifests_pass(manifest):
    assert errors_of(manifest) == []


def example_templates() -> list[dict[str, Any]]:
    docs = [d for path in sorted(EXAMPLES.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text())]
    return [d for d in docs if d and by_gvk(d["apiVersion"], d["kind"]) and "karmada" not in d["apiVersion"]]


@pytest.mark.parametrize("manifest", example_templates(), ids=lambda m: m["metadata"]["name"])
def test_shipped_examples_pass(manifest):
    assert errors_of(manifest) == []


REPLICAS = "spec.replicas"
BAD = [
    # -- spec.replicas: an int32 >= 0; null is unset (tested above)
    (
        "replicas -1",
        deployment(replicas=-1),
        REPLICAS,
        "Invalid value: -1: must be greater than or equal to 0",
    ),
    ("replicas -2^31", deployment(replicas=-(2**31)), REPLICAS, "must be greater than or equal to 0"),
    ("replicas 2^31", deployment(replicas=2**31), REPLICAS, "must be less than or equal to 2147483647"),
    ("replicas 2^63", deployment(replicas=2**63), REPLICAS, "must be less than or equal to 2147483647"),
    ("replicas 1e30", deployment(replicas=1e30), REPLICAS, "Invalid value: 1e+30: must be of type integer"),
    ("replicas '3'", deployment(replicas="3"), REPLICAS, 'Invalid value: "3": must be of type integer'),
    ("replicas 1.5", deployment(replicas=1.5), REPLICAS, "Invalid value: 1.5: must be of type integer"),
    ("replicas 3.0", deployment(replicas=3.0), REPLICAS, "must be of type integer"),
    ("replicas true", deployment(replicas=True), REPLICAS, "Invalid value: true: must be of type integer"),
    ("replicas list", deployment(replicas=[3]), REPLICAS, 'Invalid value: "array": must be of type integer'),
    ("replicas 'abc'", deployment(replicas="abc"), REPLICAS, "must be of type integer"),
    ("sts replicas", workload("StatefulSet", replicas=-1), REPLICAS, "must be greater than or equal to 0"),
    ("rs replicas", workload("ReplicaSet", replicas="2"), REPLICAS, "must be of type integer"),
    ("ds replicas", workload("DaemonSet", replicas=3), REPLICAS, 'Forbidden: unknown field "spec.replicas"'),
    ("minReadySeconds", deployment(minReadySeconds=-5), "spec.minReadySeconds", "greater than or equal to 0"),
    ("revisionHistoryLimit", deployment(revisionHistoryLimit=1.0), "spec.revisionHistoryLimit", "integer"),
    (
        "progressDeadlineSeconds",
        deployment(minReadySeconds=10, progressDeadlineSeconds=10),
        "spec.progressDeadlineSeconds",
        "must be greater than minReadySeconds",
    ),
    # -- shapes a controller walks
    ("spec a list", {**deployment(), "spec": [1]}, "spec", 'Invalid value: "array": must be of type object'),
    ("template a string", deployment(template="pod"), "spec.template", "must be of type object"),
    (
        "containers a string",
        at(deployment(), "spec.template.spec.containers", "abc"),
        "spec.template.spec.containers",
        'Invalid value: "abc": must be of type array',
    ),
    (
        "no containers",
        at(deployment(), "spec.template.spec.containers", []),
        "spec.template.spec.containers",
        "Required value",
    ),
    ("container not an object", at(deployment(), CONTAINER_AT, 7), CONTAINER, "must be of type object"),
    (
        "container name",
        at(deployment(), f"{CONTAINER_AT}.name", "Web"),
        f"{CONTAINER}.name",
        "RFC 1123 label",
    ),
    (
        "container image",
        at(deployment(), f"{CONTAINER_AT}.image", ""),
        f"{CONTAINER}.image",
        "Required value",
    ),
    (
        "duplicate container names",
        at(deployment(), "spec.template.spec.containers.1", {"name": "web", "image": "x"}),
        "spec.template.spec.containers[1].name",
        'Duplicate value: "web"',
    ),
    # -- resources
    (
        "cpu lots",
        with_resources(deployment(), {"requests": {"cpu": "lots"}}),
        f"{CONTAINER}.resources.requests[cpu]",
        'Invalid value: "lots": quantities must match the regular expression',
    ),
    (
        "requests a list",
        with_resources(deployment(), {"requests": ["cpu", "1"]}),
        f"{CONTAINER}.resources.requests",
        "must be of type object",
    ),
    (
        "resources a string",
        with_resources(deployment(), "big"),
        f"{CONTAINER}.resources",
        "must be of type object",
    ),
    (
        "quantity a bool",
        with_resources(deployment(), {"limits": {"memory": True}}),
        f"{CONTAINER}.resources.limits[memory]",
        "must be of type string",
    ),
    (
        "negative request",
        with_resources(deployment(), {"requests": {"memory": "-1Gi"}}),
        f"{CONTAINER}.resources.requests[memory]",
        "must be greater than or equal to 0",
    ),
    (
        "huge quantity",
        with_resources(deployment(), {"requests": {"memory": "1e999999"}}),
        f"{CONTAINER}.resources.requests[memory]",
        "must be less than 1e40",
    ),
    (
        "request above limit",
        with_resources(deployment(), {"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}),
        f"{CONTAINER}.resources.requests[cpu]",
        'Invalid value: "2": must be less than or equal to cpu limit of 1.5',
    ),
    (
        "init container request above limit",
        with_resources(
            deployment(), {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}, "initContainers"
        ),
        "spec.template.spec.initContainers[0].resources.requests[memory]",
        "must be less than or equal to memory limit of 1073741824",
    ),
    (
        "unknown unprefixed resource",
        with_resources(deployment(), {"requests": {"gpu": 1}}),
        f"{CONTAINER}.resources.requests[gpu]",
        "must be a standard resource for containers",
    ),
    (
        "extended resource below its limit",
        with_resources(
            deployment(), {"requests": {"example.com/fpga": 1}, "limits": {"example.com/fpga": 2}}
        ),
        f"{CONTAINER}.resources.requests[example.com/fpga]",
        "must be equal to example.com/fpga limit of 2",
    ),
    (
        "extended resource without a limit",
        with_resources(deployment(), {"requests": {"example.com/fpga": 1}}),
        f"{CONTAINER}.resources.limits",
        "Limit must be set for non overcommitable resources",
    ),
    (
        "fractional extended resource",
        with_resources(deployment(), {"limits": {"example.com/fpga": "500m"}}),
        f"{CONTAINER}.resources.limits[example.com/fpga]",
        "must be an integer",
    ),
    (
        "hugepages alone",
        with_resources(deployment(), {"limits": {"hugepages-2Mi": "4Mi"}}),
        f"{CONTAINER}.resources",
        "Forbidden: HugePages require cpu or memory",
    ),
    # -- selector and template labels
    ("selector missing", deployment(selector=None), "spec.selector", "Required value"),
    ("selector empty", deployment(selector={}), "spec.selector", "empty selector is invalid for deployment"),
    ("selector a list", deployment(selector=["app"]), "spec.selector", "must be of type object"),
    (
        "selector operator",
        deployment(selector={"matchExpressions": [{"key": "app", "operator": "Equals"}]}),
        "spec.selector.matchExpressions[0].operator",
        "Unsupported value",
    ),
    (
        "selector does not match",
        deployment(selector={"matchLabels": {"app": "api"}}),
        "spec.template.metadata.labels",
        'Invalid value: {"app": "web"}: `selector` does not match template `labels`',
    ),
    (
        "sts selector does not match",
        workload("StatefulSet", selector={"matchLabels": {"app": "api"}}),
        "spec.template.metadata.labels",
        "`selector` does not match template `labels`",
    ),
    (
        "ds selector missing",
        workload("DaemonSet", selector=None),
        "spec.selector",
        "Required value",
    ),
    (
        "template label value",
        at(deployment(), "spec.template.metadata.labels.app", 3),
        "spec.template.metadata.labels[app]",
        "label values must be strings",
    ),
    # -- pod template rules of controllers
    (
        "deployment restartPolicy",
        at(deployment(), "spec.template.spec.restartPolicy", "Never"),
        "spec.template.spec.restartPolicy",
        'Unsupported value: "Never": supported values: "Always"',
    ),
    (
        "deployment activeDeadlineSeconds",
        at(deployment(), "spec.template.spec.activeDeadlineSeconds", 30),
        "spec.template.spec.activeDeadlineSeconds",
        "must not be specified",
    ),
    # -- strategies
    ("strategy type", deployment(strategy={"type": "BlueGreen"}), "spec.strategy.type", "Unsupported value"),
    (
        "recreate with rollingUpdate",
        deployment(strategy={"type": "Recreate", "rollingUpdate": {}}),
        "spec.strategy.rollingUpdate",
        "Forbidden: may not be specified when strategy `type` is 'Recreate'",
    ),
    (
        "zero surge and unavailable",
        deployment(strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}),
        "spec.strategy.rollingUpdate.maxUnavailable",
        "may not be 0 when `maxSurge` is 0",
    ),
    (
        "unavailable over 100%",
        deployment(strategy={"rollingUpdate": {"maxUnavailable": "101%"}}),
        "spec.strategy.rollingUpdate.maxUnavailable",
        "must not be greater than 100%",
    ),
    (
        "surge not a percent",
        deployment(strategy={"rollingUpdate": {"maxSurge": "half"}}),
        "spec.strategy.rollingUpdate.maxSurge",
        "a valid percent string",
    ),
    (
        "sts podManagementPolicy",
        workload("StatefulSet", podManagementPolicy="Random"),
        "spec.podManagementPolicy",
        "Unsupported value",
    ),
    (
        "sts partition",
        workload("StatefulSet", updateStrategy={"rollingUpdate": {"partition": -1}}),
        "spec.updateStrategy.rollingUpdate.partition",
        "must be greater than or equal to 0",
    ),
    (
        "ds OnDelete with rollingUpdate",
        workload("DaemonSet", updateStrategy={"type": "OnDelete", "rollingUpdate": {}}),
        "spec.updateStrategy.rollingUpdate",
        "only allowed for updateStrategy 'RollingUpdate'",
    ),
    # -- Job and CronJob
    ("job parallelism", job(parallelism=-1), "spec.parallelism", "must be greater than or equal to 0"),
    ("job completions", job(completions="5"), "spec.completions", "must be of type integer"),
    (
        "job backoffLimit",
        job(backoffLimit=2**31),
        "spec.backoffLimit",
        "must be less than or equal to 2147483647",
    ),
    (
        "job restartPolicy defaulted to Always",
        job(restart=None),
        "spec.template.spec.restartPolicy",
        'Required value: valid values: "OnFailure", "Never"',
    ),
    (
        "job restartPolicy Always",
        job(restart="Always"),
        "spec.template.spec.restartPolicy",
        "Unsupported value",
    ),
    ("job Indexed without completions", job(completionMode="Indexed"), "spec.completions", "Required value"),
    (
        "job selector does not match",
        job(selector={"matchLabels": {"app": "other"}}, manualSelector=True),
        "spec.template.metadata.labels",
        "`selector` does not match template `labels`",
    ),
    ("cron schedule missing", cron_job(schedule=None), "spec.schedule", "Required value"),
    (
        "cron schedule fields",
        cron_job(schedule="* * * *"),
        "spec.schedule",
        "expected exactly 5 fields, found 4",
    ),
    ("cron schedule range", cron_job(schedule="0 24 * * *"), "spec.schedule", "24 is out of range [0, 23]"),
    ("cron TZ", cron_job(schedule="TZ=UTC 0 3 * * *"), "spec.schedule", "use timeZone field instead"),
    (
        "cron concurrency",
        cron_job(concurrencyPolicy="Sometimes"),
        "spec.concurrencyPolicy",
        "Unsupported value",
    ),
    (
        "cron job parallelism",
        at(cron_job(), "spec.jobTemplate.spec.parallelism", -2),
        "spec.jobTemplate.spec.parallelism",
        "must be greater than or equal to 0",
    ),
    (
        "cron job selector",
        at(cron_job(), "spec.jobTemplate.spec.selector", {"matchLabels": {"app": "web"}}),
        "spec.jobTemplate.spec.selector",
        "`selector` will be auto-generated",
    ),
    # -- Pod
    ("pod without containers", pod(containers=None), "spec.containers", "Required value"),
    ("pod restartPolicy", pod(restartPolicy="Sometimes"), "spec.restartPolicy", "Unsupported value"),
    (
        "pod deadline",
        pod(activeDeadlineSeconds=0),
        "spec.activeDeadlineSeconds",
        "must be between 1 and 4294967295",
    ),
    ("pod nodeSelector", pod(nodeSelector={"zone": 1}), "spec.nodeSelector[zone]", "must be of type string"),
    # -- ConfigMap, Secret, Service
    ("configmap key", config_map(data={"a b": "x"}), "data[a b]", "a valid config key"),
    ("configmap value", config_map(data={"a": 1}), "data[a]", "must be of type string"),
    ("configmap data a list", config_map(data=["a"]), "data", "must be of type object"),
    (
        "configmap size",
        config_map(data={"a": "x" * (1024 * 1024 + 1)}),
        "data",
        "Too long: may not be more than",
    ),
    ("configmap binaryData", config_map(binaryData={"b": "%%%"}), "binaryData[b]", "illegal base64 data"),
    (
        "configmap key in both",
        config_map(binaryData={"mode": "AAEC"}),
        "data[mode]",
        "duplicate of key present in binaryData",
    ),
    (
        "secret data",
        secret(data={"password": "hunter2!"}),
        "data[password]",
        "Invalid value: illegal base64 data",
    ),
    ("secret stringData key", secret(stringData={"..": "x"}), "stringData[..]", "must not be '..'"),
    ("service name", service(name="1web"), "metadata.name", "a DNS-1035 label"),
    ("service type", service(type="Internal"), "spec.type", "Unsupported value"),
    ("service without ports", service(ports=None), "spec.ports", "Required value"),
    ("service port", service(ports=[{"port": 70000}]), "spec.ports[0].port", "must be between 1 and 65535"),
    (
        "service port name",
        service(ports=[{"port": 1}, {"port": 2, "name": "b"}]),
        "spec.ports[0].name",
        "Required",
    ),
    (
        "service protocol",
        service(ports=[{"port": 1, "protocol": "tcp"}]),
        "spec.ports[0].protocol",
        "Unsupported",
    ),
    ("service clusterIP", service(clusterIP="10.0.0"), "spec.clusterIP", "must be a valid IP address"),
    (
        "service targetPort",
        service(ports=[{"port": 1, "targetPort": "-x"}]),
        "spec.ports[0].targetPort",
        "hyphen",
    ),
    (
        "externalName",
        service(type="ExternalName", ports=None),
        "spec.externalName",
        "Required value",
    ),
    # -- names, per kind
    ("deployment name", at(deployment(), "metadata.name", "Web_1"), "metadata.name", "RFC 1123 subdomain"),
    (
        "namespace name",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}},
        "metadata.name",
        "RFC 1123 label",
    ),
    (
        "clusterrole name",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "a/b"}},
        "metadata.name",
        "may not contain '/'",
    ),
    ("job name", at(job(), "metadata.name", "j" * 64), "metadata.name", "must be no more than 63 characters"),
    (
        "cronjob name",
        at(cron_job(), "metadata.name", "c" * 53),
        "metadata.name",
        "no more than 52 characters",
    ),
]


@pytest.mark.parametrize(("manifest", "field", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_builtin_rule_names_the_field(manifest, field, message):
    errors = errors_of(manifest)
    assert any(f == field and message in msg for f, msg, _ in errors), errors


def test_every_problem_is_reported_at_once():
    manifest = with_resources(deployment(replicas=-1, selector={}), {"requests": {"cpu": "lots"}})
    fields = [f for f, _, _ in errors_of(manifest)]
    assert fields == ["spec.replicas", "spec.selector", f"{CONTAINER}.resources.requests[cpu]"]


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ({**deployment(), "spec": "x"}, "spec"),
        (deployment(template="pod"), "spec.template"),
        (at(deployment(), "spec.template.spec.containers", "abc"), "spec.template.spec.containers"),
        (at(deployment(), "spec.template.spec", [1]), "spec.template.spec"),
        # a bad limit is not also compared with its request, and still counts as "cpu given" for hugepages
        (
            with_resources(deployment(), {"requests": {"cpu": "1"}, "limits": {"cpu": "lots"}}),
            f"{CONTAINER}.resources.limits[cpu]",
        ),
        (
            with_resources(deployment(), {"limits": {"cpu": "lots", "hugepages-2Mi": "2Mi"}}),
            f"{CONTAINER}.resources.limits[cpu]",
        ),
    ],
)
def test_a_bad_value_is_one_error_not_a_cascade(manifest, field):
    assert [f for f, _, _ in errors_of(manifest)] == [field]


def test_reasons_are_kubernetes_cause_types():
    assert errors_of(deployment(replicas=-1))[0][2] == INVALID
    assert errors_of(deployment(selector=None))[0][2] == REQUIRED
    assert errors_of(job(restart="Always"))[0][2] == UNSUPPORTED
    assert errors_of(at(deployment(), "spec.template.spec.containers.1", {"name": "web", "image": "x"}))[0][
        2
    ] == (DUPLICATE)
    assert errors_of(workload("DaemonSet", replicas=1))[0][2] == FORBIDDEN
    assert errors_of(config_map(data={"a": "x" * (1024 * 1024 + 1)}))[0][2] == TOO_LONG


def test_secret_values_never_appear_in_errors():
    errors = errors_of(secret(data={"password": "s3cr3t-not-base64!"}))
    assert errors and all("s3cr3t" not in message for _, message, _ in errors)


def test_crd_kinds_get_metadata_checks_only():
    widget = {
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": "lots", "template": [1]},
    }
    assert errors_of(widget) == []


# ---------------------------------------------------------------------------------------------------------
# Karmada kinds: the CRD's integer formats and minimums


def policy(**placement: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": placement,
        },
    }


def weighted(weight: Any) -> dict[str, Any]:
    rule = {"targetCluster": {"clusterNames": ["m1"]}, "weight": weight}
    return policy(
        replicaScheduling={
            "replicaSchedulingType": "Divided",
            "weightPreference": {"staticWeightList": [rule]},
        }
    )


WEIGHT = "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight"
KARMADA_BAD = [
    (
        "empty resourceSelectors",
        at(policy(), "spec.resourceSelectors", []),
        "spec.resourceSelectors",
        "Required value",
    ),
    ("weight 1e30", weighted(1e30), WEIGHT, "Invalid value: 1e+30: must be of type integer"),
    ("weight 2^63 (int64)", weighted(2**63), WEIGHT, "must be less than or equal to 9223372036854775807"),
    ("weight 0 (minimum 1)", weighted(0), WEIGHT, "must be greater than or equal to 1"),
    ("weight '2'", weighted("2"), WEIGHT, 'Invalid value: "2": must be of type integer'),
    (
        "priority int32",
        at(policy(), "spec.priority", 2**31),
        "spec.priority",
        "less than or equal to 2147483647",
    ),
    (
        "maxGroups int64",
        policy(spreadConstraints=[{"spreadByField": "cluster", "maxGroups": 2**64}]),
        "spec.placement.spreadConstraints[0].maxGroups",
        "must be less than or equal to 9223372036854775807",
    ),
    (
        "clusterTolerations tolerationSeconds int64",
        policy(
            clusterTolerations=[
                {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2**63}
            ]
        ),
        "spec.placement.clusterTolerations[0].tolerationSeconds",
        "must be less than or equal to 9223372036854775807",
    ),
    (
        "gracePeriodSeconds int32",
        at(
            at(policy(), "spec.propagateDeps", True),
            "spec.failover",
            {
                "application": {
                    "decisionConditions": {"tolerationSeconds": 2**31},
                    "gracePeriodSeconds": 2**31,
                }
            },
        ),
        "spec.failover.application.gracePeriodSeconds",
        "must be less than or equal to 2147483647",
    ),
    (
        "decision tolerationSeconds int32",
        at(
            at(policy(), "spec.propagateDeps", True),
            "spec.failover",
            {"application": {"decisionConditions": {"tolerationSeconds": 2**31}}},
        ),
        "spec.failover.application.decisionConditions.tolerationSeconds",
        "must be less than or equal to 2147483647",
    ),
    (
        "rebalancer ttl int32",
        {
            "apiVersion": "apps.karmada.io/v1alpha1",
            "kind": "WorkloadRebalancer",
            "metadata": {"name": "r"},
            "spec": {
                "workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "a", "namespace": "d"}],
                "ttlSecondsAfterFinished": 2**31,
            },
        },
        "spec.ttlSecondsAfterFinished",
        "must be less than or equal to 2147483647",
    ),
    (
        "cluster resource model grade uint",
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "m1"},
            "spec": {
                "syncMode": "Push",
                "resourceModels": [
                    {"grade": -1, "ranges": [{"name": "cpu", "min": "0", "max": "9223372036854775807"}]}
                ],
            },
        },
        "spec.resourceModels[0].grade",
        "must be greater than or equal to 0",
    ),
]


@pytest.mark.parametrize(
    ("manifest", "field", "message"), [c[1:] for c in KARMADA_BAD], ids=[c[0] for c in KARMADA_BAD]
)
def test_karmada_int_ranges(manifest, field, message):
    errors = errors_of(manifest)
    assert any(f == field and message in msg for f, msg, _ in errors), errors


# ---------------------------------------------------------------------------------------------------------
# the workload interpreter reads whatever admission lets through, and names what it cannot read


@pytest.mark.parametrize(
    "manifest", [m for m in VALID if m["kind"] in ("Deployment", "StatefulSet", "Job", "Pod")]
)
def test_interpreter_reads_every_admitted_workload(manifest):
    replicas_of(manifest)
    resource_request_of(manifest)
    with_replicas(manifest, 1)


def test_interpreter_defaults_null_like_the_api_server():
    assert replicas_of(deployment(replicas=None)) == 1
    assert replicas_of(job(parallelism=None)) == 1
    assert resource_request_of(
        with_resources(deployment(), {"requests": {"cpu": None, "memory": "1Gi"}})
    ) == {"memory": "1Gi"}
    spec_less = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": None}
    assert with_replicas(spec_less, 3)["spec"] == {"replicas": 3}


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (deployment(replicas=-1), "spec.replicas"),
        (deployment(replicas="3"), "spec.replicas"),
        (deployment(replicas=True), "spec.replicas"),
        (job(parallelism=1.5), "spec.parallelism"),
        ({**deployment(), "spec": [1]}, "spec"),
        (deployment(template="pod"), "spec.template"),
        (at(deployment(), "spec.template.spec.containers", "abc"), "spec.template.spec.containers"),
        (with_resources(deployment(), {"requests": ["cpu"]}), f"{CONTAINER}.resources.requests"),
        (with_resources(deployment(), {"requests": {"cpu": "lots"}}), f"{CONTAINER}.resources.requests[cpu]"),
        (with_resources(deployment(), "big"), f"{CONTAINER}.resources"),
    ],
)
def test_interpreter_names_the_field_it_cannot_read(manifest, field):
    with pytest.raises(InvalidTemplate, match="^" + re.escape(field) + ":"):
        replicas_of(manifest)
        resource_request_of(manifest)


def test_crd_kinds_are_not_read():
    widget = {"apiVersion": "example.io/v1", "kind": "Widget", "spec": [1, 2]}
    assert (replicas_of(widget), resource_request_of(widget)) == (0, {})
    assert with_replicas(widget, 3) == widget


def test_rbac_names_with_colons_make_dns_work_names():
    name = work_name("", "system:aggregate-to-view", "ClusterRole")
    assert name.startswith("system.aggregate-to-view-") and ":" not in name
    assert work_name("", "system:x", "ClusterRole") != work_name("", "system.x", "ClusterRole")
