"""Server-side printing: kube-apiserver's columns and cell texts for built-in kinds, Karmada's CRD columns,
any CRD's additionalPrinterColumns through JSONPath, and the Table's shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from federation.model import tables
from federation.model.jsonpath import compile_path
from federation.model.tables_builtin import printer_for
from federation.model.tables_pods import pod_summary

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def stamp(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def row(group: str, kind: str, obj: dict) -> dict:
    table = tables.table(printer_for(group, kind), [obj], now=NOW)
    names = [c["name"] for c in table["columnDefinitions"]]
    return dict(zip(names, table["rows"][0]["cells"], strict=True))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (119, "119s"),
        (200, "3m20s"),
        (300, "5m"),
        (900, "15m"),
        (3 * 3600 + 600, "3h10m"),
        (10 * 3600, "10h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400 + 30 * 86400, "3y30d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration_is_apimachinerys(seconds: float, text: str) -> None:
    assert tables.human_duration(seconds) == text


def test_jsonpath_subset() -> None:
    doc = {
        "status": {
            "conditions": [{"type": "Scheduled", "status": "True"}, {"type": "Ready", "status": "False"}]
        },
        "spec": {"items": [{"kind": "A", "n": 1}, {"kind": "B", "n": 3}], "a.b": 7},
    }
    assert compile_path('.status.conditions[?(@.type=="Ready")].status').find(doc) == ["False"]
    assert compile_path(".spec.items[*].kind").find(doc) == ["A", "B"]
    assert compile_path("{.spec.items[-1].n}").find(doc) == [3]
    assert compile_path(".spec.items[?(@.n > 2)].kind").find(doc) == ["B"]
    assert compile_path(".spec['a.b']").find(doc) == [7]
    assert compile_path(r".spec.a\.b").find(doc) == [7]
    assert compile_path(".spec.missing[0].x").find(doc) == []
    for bad in ("spec.x", ".a..b", ".a[?(@.x ~ 1)]", ".a[1"):
        with pytest.raises(ValueError):
            compile_path(bad)


def test_karmada_kinds_print_the_columns_their_crds_declare() -> None:
    binding = {
        "metadata": {"name": "web-deployment", "creationTimestamp": stamp(7200)},
        "status": {"conditions": [{"type": "Scheduled", "status": "True"}]},
    }
    assert row("work.karmada.io", "ResourceBinding", binding) == {
        "Name": "web-deployment",
        "SCHEDULED": "True",
        "FULLYAPPLIED": None,  # kubectl prints <none>
        "AGE": "120m",
    }
    policy = {"metadata": {"name": "p", "creationTimestamp": stamp(30)}, "spec": {"priority": 5}}
    assert row("policy.karmada.io", "PropagationPolicy", policy) == {
        "Name": "p",
        "CONFLICT-RESOLUTION": None,
        "PRIORITY": "5",
        "AGE": "30s",
    }
    work = {
        "metadata": {"name": "w", "creationTimestamp": stamp(30)},
        "spec": {"workload": {"manifests": [{"kind": "Deployment"}, {"kind": "Service"}]}},
    }
    assert row("work.karmada.io", "Work", work)["WORKLOAD-KIND"] == "Deployment"  # the first result only
    rebalancer = row("apps.karmada.io", "WorkloadRebalancer", {"metadata": {"name": "r"}})
    assert rebalancer == {"Name": "r", "AGE": None}


def test_cluster_prints_as_karmadas_aggregated_apiserver() -> None:
    cluster = {
        "metadata": {"name": "member1", "creationTimestamp": stamp(60)},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://m1", "region": "eu", "zones": ["a", "b"]},
        "status": {"kubernetesVersion": "v1.30.0", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert row("cluster.karmada.io", "Cluster", cluster) == {
        "Name": "member1",
        "Version": "v1.30.0",
        "Mode": "Push",
        "Ready": "True",
        "Age": "60s",
        "Zones": "a,b",
        "Region": "eu",
        "Provider": "<none>",
        "API-Endpoint": "https://m1",
        "Proxy-URL": "<none>",
    }
    assert row("cluster.karmada.io", "Cluster", {"metadata": {"name": "bare"}})["Ready"] == "Unknown"


def test_crd_columns_follow_additional_printer_columns() -> None:
    declared = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "description": "the color"},
        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
        {"name": "Since", "type": "date", "jsonPath": ".status.since"},
        {"name": "Broken", "type": "string", "jsonPath": "no-dot"},  # unusable: left out
        {"name": "Odd", "type": "color", "jsonPath": ".spec.color"},  # unknown type: left out
    ]
    columns = tables.crd_columns(declared)
    widget = {
        "metadata": {"name": "w1"},
        "spec": {"size": 3.0, "color": {"r": 1}},
        "status": {"ready": True, "since": stamp(90)},
    }
    table = tables.table(columns, [widget], now=NOW)
    definitions = table["columnDefinitions"]
    assert [(d["name"], d["type"], d["priority"]) for d in definitions] == [
        ("Name", "string", 0),
        ("Size", "integer", 1),
        ("Color", "string", 0),
        ("Ready", "boolean", 0),
        ("Since", "date", 0),
    ]
    assert definitions[2]["description"] == "the color"
    assert table["rows"][0]["cells"] == ["w1", 3, '{"r":1}', True, "90s"]
    assert [d["name"] for d in tables.table(tables.crd_columns([]), [], now=NOW)["columnDefinitions"]] == [
        "Name",
        "Age",
    ]


def test_builtin_workloads_print_as_kubectl() -> None:
    deployment = {
        "metadata": {"name": "web", "creationTimestamp": stamp(45)},
        "spec": {
            "selector": {"matchLabels": {"tier": "a", "app": "web"}},
            "template": {
                "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}
            },
        },
        "status": {"readyReplicas": 1, "updatedReplicas": 1},
    }
    assert row("apps", "Deployment", deployment) == {
        "Name": "web",
        "Ready": "1/1",  # spec.replicas defaults to 1
        "Up-to-date": 1,
        "Available": 0,
        "Age": "45s",
        "Containers": "c1,c2",
        "Images": "i1,i2",
        "Selector": "app=web,tier=a",
    }
    job = {
        "metadata": {"name": "j"},
        "spec": {"completions": 3},
        "status": {
            "succeeded": 1,
            "startTime": stamp(200),
            "conditions": [{"type": "Suspended", "status": "True"}],
        },
    }
    cells = row("batch", "Job", job)
    assert (cells["Status"], cells["Completions"], cells["Duration"]) == ("Suspended", "1/3", "3m20s")
    cron = {"metadata": {"name": "c"}, "spec": {"schedule": "*/5 * * * *"}, "status": {"active": [{}]}}
    cells = row("batch", "CronJob", cron)
    assert [cells[k] for k in ("Schedule", "Timezone", "Suspend", "Active", "Last Schedule")] == [
        "*/5 * * * *",
        "<none>",
        "False",
        1,
        "<none>",
    ]


def test_services_configmaps_and_namespaces_print_as_kubectl() -> None:
    service = {
        "metadata": {"name": "svc"},
        "spec": {
            "type": "NodePort",
            "clusterIPs": ["10.0.0.1"],
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            "selector": {"app": "web"},
        },
    }
    cells = row("", "Service", service)
    assert [cells[k] for k in ("Type", "Cluster-IP", "External-IP", "Port(s)", "Selector")] == [
        "NodePort",
        "10.0.0.1",
        "<none>",
        "80:30080/TCP,53/UDP",
        "app=web",
    ]
    balancer = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"}}
    assert row("", "Service", balancer)["External-IP"] == "<pending>"
    config = {"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert row("", "ConfigMap", config)["Data"] == 3
    assert row("", "Namespace", {"metadata": {"name": "ns"}})["Status"] == "Active"
    assert [
        d["name"]
        for d in tables.table(printer_for("rbac.authorization.k8s.io", "Role"), [], now=NOW)[
            "columnDefinitions"
        ]
    ] == ["Name", "Created At"]


def test_pod_status_reasons() -> None:
    def pod(**status: object) -> dict:
        spec = {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "i"}]}
        return {"metadata": {"name": "p"}, "spec": spec, "status": status}

    crashing = pod(
        phase="Running",
        initContainerStatuses=[{"name": "i", "state": {"terminated": {"exitCode": 0}}}],
        containerStatuses=[
            {"name": "a", "ready": True, "state": {"running": {}}, "restartCount": 0},
            {
                "name": "b",
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "restartCount": 3,
                "lastState": {"terminated": {"finishedAt": stamp(300)}},
            },
        ],
    )
    assert pod_summary(crashing, NOW) == ("1/2", "CrashLoopBackOff", "3 (5m ago)")
    initializing = pod(phase="Pending", initContainerStatuses=[{"name": "i", "state": {"running": {}}}])
    assert pod_summary(initializing, NOW) == ("0/2", "Init:0/1", "0")
    deleting = {**crashing, "metadata": {"name": "p", "deletionTimestamp": stamp(1)}}
    assert pod_summary(deleting, NOW)[1] == "Terminating"


def test_events_print_kubectls_columns() -> None:
    event = {
        "metadata": {"name": "web.1"},
        "involvedObject": {"kind": "ResourceBinding", "name": "web"},
        "type": "Warning",
        "reason": "ScheduleBindingFailed",
        "message": " no cluster fits ",
        "source": {"component": "scheduler"},
        "firstTimestamp": stamp(600),
        "lastTimestamp": stamp(60),
        "count": 4,
    }
    assert row("", "Event", event) == {
        "Last Seen": "60s",
        "Type": "Warning",
        "Reason": "ScheduleBindingFailed",
        "Object": "resourcebinding/web",
        "Subobject": "",
        "Source": "scheduler",
        "Message": "no cluster fits",
        "First Seen": "10m",
        "Count": 4,
        "Name": "web.1",
    }
    series = {
        "regarding": {"kind": "Cluster", "name": "m1"},
        "series": {"count": 2, "lastObservedTime": stamp(5)},
    }
    cells = row("events.k8s.io", "Event", series)
    assert (cells["Object"], cells["Count"], cells["Last Seen"]) == ("cluster/m1", 2, "5s")


def test_table_carries_the_object_as_include_object_says() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "uid": "u"},
        "data": {"a": "b"},
    }
    columns = printer_for("", "ConfigMap")
    meta = tables.table(columns, [obj], now=NOW, version="v1beta1", resource_version="7", continue_token="t")
    assert meta["apiVersion"] == "meta.k8s.io/v1beta1" and meta["kind"] == "Table"
    assert meta["metadata"] == {"resourceVersion": "7", "continue": "t"}
    assert meta["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1beta1",
        "metadata": {"name": "cm", "uid": "u"},
    }
    assert tables.table(columns, [obj], now=NOW, include_object="Object")["rows"][0]["object"] == obj
    assert "object" not in tables.table(columns, [obj], now=NOW, include_object="None")["rows"][0]


def test_a_malformed_object_prints_without_failing() -> None:
    for group, kind in (("apps", "Deployment"), ("", "Pod"), ("", "Service"), ("batch", "Job")):
        broken = {"metadata": {"name": "x"}, "spec": "nonsense", "status": ["not", "a", "map"]}
        cells = row(group, kind, broken)
        assert cells["Name"] == "x"
