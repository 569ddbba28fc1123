"""The live plan (``POST /federation/v1/plan``) calls HTTP extenders as the scheduler does, on both backends,
over real HTTP both ways: its answer is what the scheduler then writes; it filters and prioritizes through
the extender but never binds; ``federation plan`` offline (``--config``, ``--clusters``) and live print the
same placement."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from federation.cli import server
from federation.cli.main import cli
from federation.controllers.detector import Detector
from federation.controllers.runtime import FakeClock
from federation.controllers.scheduler import Scheduler
from federation.extenders import build_extenders, close_extenders
from federation.settings import load_settings
from federation.store.bindings import BindingRepository
from federation.store.decisions import DecisionRepository
from tests.conftest import RunningServer
from tests.extenders.extender_servers import GPU, SCORE_LABEL, KubeExtender, serving

PLAN = "/federation/v1/plan"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]
# (name, GPUs, extender score): member2 has too few GPUs for a replica, the spread keeps the best two.
MEMBERS = [("member1", 4, 2), ("member2", 1, 9), ("member3", 8, 7), ("member4", 6, 5)]


def cluster(name: str, score: int) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": {SCORE_LABEL: str(score)}},
        "spec": {"syncMode": "Push", "apiEndpoint": f"https://{name}.example:6443"},
    }


def cluster_status(gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": "16", "memory": "64Gi", "pods": "110", GPU: str(gpus)}
    return {
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": ""}],
        "apiEnablements": APIS,
        "resourceSummary": {"allocatable": allocatable},
    }


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "trainer", "namespace": "default", "labels": {"app": "trainer"}},
    "spec": {
        "replicas": 5,
        "selector": {"matchLabels": {"app": "trainer"}},
        "template": {
            "metadata": {"labels": {"app": "trainer"}},
            "spec": {
                "containers": [
                    {
                        "name": "trainer",
                        "image": "trainer",
                        "resources": {"requests": {"cpu": "1", GPU: "2"}, "limits": {GPU: "2"}},
                    }
                ]
            },
        },
    },
}
POLICY = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "trainer", "namespace": "default"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "trainer"}],
        "placement": {
            "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 2}],
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            },
        },
    },
}


def extender_entry(url: str) -> dict[str, Any]:
    return {
        "urlPrefix": url,
        "apiVersion": "v1",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "bindVerb": "bind",
        "weight": 10,
        "httpTimeout": "10s",
        # As a GPU extender is configured for kube-scheduler: the GPUs are the extender's to judge.
        "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
    }


@pytest.fixture
def kube() -> Iterator[tuple[KubeExtender, str]]:
    extender = KubeExtender()
    with serving(extender) as url:
        yield extender, url


@pytest.fixture
def live(tmp_path: Path, database_url: str, kube: tuple[KubeExtender, str]) -> Iterator[RunningServer]:
    """A server whose controllers do not run (the test drives the scheduler), configured with the extender."""
    settings = load_settings(
        data_dir=str(tmp_path / "data"),
        database_url=database_url,
        api={"port": 0},
        scheduler={"extenders": [extender_entry(kube[1])]},
    )
    process = server.build(settings, run_controllers=False)
    process.start_in_thread()
    running = RunningServer(process)
    with running.client() as http:
        for name, gpus, score in MEMBERS:
            assert http.post(CLUSTERS, json=cluster(name, score)).status_code == 201
            status = {**cluster(name, score), "status": cluster_status(gpus)}
            assert http.put(f"{CLUSTERS}/{name}/status", json=status).is_success
        assert http.post(POLICIES, json=POLICY).status_code == 201
        assert http.post(DEPLOYMENTS, json=DEPLOYMENT).status_code == 201
    try:
        yield running
    finally:
        process.stop()


def placed(binding: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c.get("replicas", 0) for c in binding["spec"].get("clusters") or []}


def schedule_for_real(running: RunningServer) -> tuple[dict[str, Any], dict[str, Any]]:
    """The detector and the scheduler (with the extenders of the server's settings) on the server's
    database; the stored binding and its decision's explanation."""
    ctx = running.process.api_context
    assert ctx is not None
    clock = FakeClock(datetime.now(UTC))
    extenders = build_extenders(ctx.settings.scheduler.extenders)
    try:
        Detector(ctx.uow, clock, "test").reconcile()
        assert Scheduler(ctx.uow, clock, "test", extenders=extenders).reconcile().processed == 1
    finally:
        close_extenders(extenders)
    with ctx.uow() as session:
        stored = BindingRepository(session).get("default", "trainer-deployment")
        assert stored is not None
        [decision] = DecisionRepository(session).history(binding_uid=stored["metadata"]["uid"])
    return stored, decision.explanation


def test_live_plan_calls_the_extender_and_matches_the_scheduler(
    live: RunningServer, kube: tuple[KubeExtender, str]
) -> None:
    extender, url = kube
    with live.client() as http:
        template = http.get(f"{DEPLOYMENTS}/trainer").json()
        answer = http.post(PLAN, json={"kind": "List", "items": [template]})
    assert answer.status_code == 200, answer.text
    [planned] = answer.json()["items"]
    assert set(placed(planned)) == {"member3", "member4"}  # best two scores among those with GPUs
    assert sum(placed(planned).values()) == 5
    explanation = planned["status"]["schedulingExplanation"]
    assert explanation["clusters"]["member2"]["filter"]["reason"] == f"Insufficient {GPU}"
    assert explanation["clusters"]["member3"]["scores"][f"Extender({url})"] == {"score": 70, "weight": 10}
    assert extender.verbs() == ["filter", "prioritize"]  # a plan never binds
    stored, decided = schedule_for_real(live)
    assert stored["spec"] == planned["spec"]
    assert decided == explanation
    scheduled = next(c for c in stored["status"]["conditions"] if c["type"] == "Scheduled")
    assert scheduled["reason"] == "Success"
    assert [a["node"] for v, a in extender.calls if v == "bind"] == sorted(placed(planned))


def test_federation_plan_live_and_offline_print_the_same(
    live: RunningServer, kube: tuple[KubeExtender, str], tmp_path: Path
) -> None:
    with live.client() as http:
        template = http.get(f"{DEPLOYMENTS}/trainer").json()
        clusters = http.get(CLUSTERS).json()["items"]
        expected = placed(http.post(PLAN, json={"kind": "List", "items": [template]}).json()["items"][0])
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump_all([template, POLICY]))
    live_run = CliRunner().invoke(
        cli, ["--kubeconfig", str(live.kubeconfig), "plan", "-f", str(app), "-o", "json"]
    )
    assert live_run.exit_code == 0, live_run.output
    assert placed(json.loads(live_run.output)["items"][0]) == expected
    clusters_file = tmp_path / "clusters.yaml"
    clusters_file.write_text(yaml.safe_dump_all(clusters))
    config = tmp_path / "federation.yaml"
    config.write_text(yaml.safe_dump({"scheduler": {"extenders": [extender_entry(kube[1])]}}))
    offline = CliRunner().invoke(
        cli, ["--config", str(config), "plan", "-f", str(app), "--clusters", str(clusters_file), "-o", "json"]
    )
    assert offline.exit_code == 0, offline.output
    assert placed(json.loads(offline.output)["items"][0]) == expected
    assert "bind" not in kube[0].verbs()


def test_offline_plan_refuses_two_binders_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "federation.yaml"
    binders = [extender_entry("http://127.0.0.1:1/a"), extender_entry("http://127.0.0.1:1/b")]
    config.write_text(yaml.safe_dump({"scheduler": {"extenders": binders}}))
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump_all([DEPLOYMENT, POLICY]))
    result = CliRunner().invoke(
        cli, ["--config", str(config), "plan", "-f", str(app), "--clusters", str(app)]
    )
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: scheduler.extenders: only one extender can implement bind; found 2: "
        "http://127.0.0.1:1/a, http://127.0.0.1:1/b"
    )
