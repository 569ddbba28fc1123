"""`federation plan` end to end: offline from files (table, json, yaml), and live against a server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from federation.cli.main import cli
from tests.api.test_plan import CLUSTERS, cluster, cluster_status, start_without_controllers

ROLE = "topology.kosmos.io/role"
APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]


def member(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"syncMode": "Push", "apiEndpoint": f"https://{name}:6443"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "apiEnablements": APIS,
            "resourceSummary": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        },
    }


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
    "spec": {"replicas": 3},
}
STATIC = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "nginx"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
        "placement": {
            "clusterAffinity": {"clusterNames": ["member1", "member2"]},
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {
                    "staticWeightList": [
                        {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                        {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2},
                    ]
                },
            },
        },
    },
}


def write(tmp_path: Path, name: str, docs: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_offline_plan_static_weights_in_every_output(tmp_path: Path) -> None:
    app = write(tmp_path, "app.yaml", [DEPLOYMENT, STATIC])
    clusters = write(tmp_path, "clusters.yaml", [member("member1"), member("member2")])
    as_json = run("plan", "-f", app, "--clusters", clusters, "-o", "json")
    assert as_json.exit_code == 0, as_json.output
    listing = json.loads(as_json.output)
    assert listing["kind"] == "List" and listing["apiVersion"] == "v1"
    [binding] = listing["items"]
    assert binding["apiVersion"] == "work.karmada.io/v1alpha2" and binding["kind"] == "ResourceBinding"
    assert binding["spec"]["clusters"] == [
        {"name": "member1", "replicas": 1},
        {"name": "member2", "replicas": 2},
    ]
    assert binding["status"]["conditions"][0]["reason"] == "Success"
    assert "schedulingExplanation" in binding["status"]
    as_yaml = yaml.safe_load(run("plan", "-f", app, "--clusters", clusters, "-o", "yaml").output)
    assert as_yaml["items"][0]["spec"]["clusters"] == binding["spec"]["clusters"]
    table = run("plan", "-f", app, "--clusters", clusters).output.splitlines()
    assert table[0].split() == ["BINDING", "RESULT", "CLUSTERS", "MESSAGE"]
    assert table[1].split()[:3] == ["default/nginx-deployment", "Success", "member1:1,member2:2"]


def test_offline_plan_workload_policy_example(tmp_path: Path) -> None:
    dynamic = json.loads(json.dumps(STATIC))
    dynamic["spec"]["placement"] = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"},
        }
    }
    wlp = {
        "apiVersion": "kosmos.io/v1alpha1",
        "kind": "WorkloadPolicy",
        "metadata": {"name": "split"},
        "spec": {
            "topologyKey": ROLE,
            "labelSelector": {"matchLabels": {"app": "nginx"}},
            "allocationPolicy": [{"name": "member", "replicas": 1}, {"name": "host", "replicas": 3}],
            "allocationType": "Required",
            "allocationMethod": "Fill",
        },
    }
    six = {**DEPLOYMENT, "spec": {"replicas": 6}}
    clusters = write(
        tmp_path, "clusters.yaml", [member("member1", {ROLE: "member"}), member("host1", {ROLE: "host"})]
    )
    required = run("plan", "-f", write(tmp_path, "a.yaml", [six, dynamic, wlp]), "--clusters", clusters)
    row = required.output.splitlines()[1]
    assert "host1:3,member1:1" in row and "4/6 replicas placed, 2 unplaced" in row
    wlp["spec"].update(allocationType="Preferred", allocationMethod="Balance")
    preferred = run(
        "plan", "-f", write(tmp_path, "b.yaml", [six, dynamic, wlp]), "--clusters", clusters, "-o", "json"
    )
    targets = {c["name"]: c["replicas"] for c in json.loads(preferred.output)["items"][0]["spec"]["clusters"]}
    assert sum(targets.values()) == 6 and targets["member1"] >= 1 and targets["host1"] >= 3


def test_offline_plan_errors_are_one_line(tmp_path: Path) -> None:
    app = write(tmp_path, "app.yaml", [DEPLOYMENT, STATIC])
    wrong = CliRunner().invoke(cli, ["plan", "-f", app, "--clusters", app])
    assert wrong.exit_code == 1
    assert (
        wrong.output.strip()
        == "error: the clusters file holds a 'Deployment'; only Cluster objects belong there"
    )
    missing = CliRunner().invoke(cli, ["plan", "-f", str(tmp_path / "none.yaml"), "--clusters", app])
    assert missing.exit_code == 1 and "does not exist" in missing.output


def test_live_plan_through_the_server(tmp_path: Path) -> None:
    server = start_without_controllers(tmp_path)
    try:
        with server.client() as http:
            for name in ("member1", "member2"):
                assert http.post(CLUSTERS, json=cluster(name, 10)).status_code == 201
                http.put(
                    f"{CLUSTERS}/{name}/status", json={**cluster(name, 10), "status": cluster_status(10)}
                )
        app = write(tmp_path, "app.yaml", [DEPLOYMENT, STATIC])
        token = server.admin_token or ""
        ca = str(tmp_path / "data" / "pki" / "ca.crt")  # the CA `serve` made; kubectl's flag names
        result = run(
            "--server", server.url, "--token", token, "--certificate-authority", ca, "plan", "-f", app
        )
        assert result.exit_code == 0, result.output
        assert result.output.splitlines()[1].split()[:3] == [
            "default/nginx-deployment",
            "Success",
            "member1:1,member2:2",
        ]
    finally:
        server.process.stop()


def test_describe_shows_the_explanation(tmp_path: Path) -> None:
    from federation.cli.describe import describe_text

    tainted = member("member2")
    tainted["spec"]["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    app = write(tmp_path, "app.yaml", [DEPLOYMENT, STATIC])
    clusters = write(tmp_path, "clusters.yaml", [member("member1"), tainted])
    [binding] = json.loads(run("plan", "-f", app, "--clusters", clusters, "-o", "json").output)["items"]
    text = describe_text(binding)
    lines = text.split("Scheduling explanation:\n", 1)[1].splitlines()  # spec lists cluster names too
    assert "  Result: Success, trigger: PlacementChanged, strategy: StaticWeight" in lines
    member1 = next(line for line in lines if line.strip().startswith("member1"))
    assert (
        member1.split()[:5] == ["member1", "selected", "3", "110", "0"] and "ClusterLocality=0x1" in member1
    )
    member2 = next(line for line in lines if line.strip().startswith("member2"))
    assert member2.split()[:3] == ["member2", "filtered", "0"]
    assert "TaintToleration: cluster(s) had untolerated taint {maintenance: }" in member2
    assert "  Selection order: member1" in lines and "  Division:" in lines
