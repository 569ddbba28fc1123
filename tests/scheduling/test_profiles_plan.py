"""``federation plan`` (offline, live endpoint, and the CLI with ``--config``) answers what the scheduler
writes, under the database scheduler's profiles, on both backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from federation.api.plan import plan_live
from federation.cli.main import cli
from federation.scheduling.offline import plan_manifests
from federation.scheduling.planner import engine_config, stored_status
from federation.scheduling.profiles import SERVICE_CLASS_ANNOTATION
from federation.scheduling.types import EngineConfig
from federation.settings import load_settings
from federation.store.repository import ObjectRepository
from tests.controllers.test_scheduler import APIS, DYNAMIC, Harness, policy

PROFILE_FILE = Path(__file__).resolve().parents[2] / "config" / "profiles" / "database-scheduler.yaml"
ONE_CLUSTER = {"replicaScheduling": DYNAMIC, "spreadConstraints": [
    {"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]}  # fmt: skip


def member(name: str, memory: str, memory_used: str, disk: str, disk_used: str) -> tuple[dict[str, Any], ...]:
    obj = {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Push", "apiEndpoint": f"https://{name}:6443"},
    }
    status = {
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": ""}],
        "apiEnablements": APIS,
        "resourceSummary": {
            "allocatable": {"cpu": "32", "memory": memory, "ephemeral-storage": disk, "pods": "110"},
            "allocated": {"memory": memory_used, "ephemeral-storage": disk_used},
        },
    }
    return obj, status


MEMBERS = [
    member("big-busy", "64Gi", "48Gi", "4Ti", "0"),  # 25% memory free
    member("small-free", "16Gi", "4Gi", "1Ti", "0"),  # 75% memory free
    member("full-disk", "64Gi", "0", "1Ti", "900Gi"),  # all memory free, disk past mysql's 250Gi hold
]


def deployment(name: str, replicas: int, requests: dict[str, str], service_class: str = "") -> dict[str, Any]:
    pod_meta: dict[str, Any] = {"labels": {"app": name}}
    if service_class:  # on the pod template, where the database scheduler read it
        pod_meta["annotations"] = {SERVICE_CLASS_ANNOTATION: service_class}
    container = {"name": name, "image": name, "resources": {"requests": requests}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": pod_meta, "spec": {"containers": [container]}},
        },
    }


WORKLOADS = [
    (
        deployment("mysql", 1, {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "10Gi"}, "mysql"),
        ONE_CLUSTER,
    ),
    (deployment("cache", 5, {"cpu": "500m", "memory": "6Gi"}, "redis"), {"replicaScheduling": DYNAMIC}),
    (deployment("web", 3, {"cpu": "16"}), {"replicaScheduling": DYNAMIC}),
]


@pytest.fixture
def harness(database_url: str) -> Iterator[Harness]:
    running = Harness(database_url, config=engine_config(load_settings(PROFILE_FILE).scheduler))
    for obj, status in MEMBERS:
        running.create(obj, status)
    yield running
    running.close()


def stored(harness: Harness, kind: str, api_version: str, namespace: str, name: str) -> dict[str, Any]:
    with harness.uow() as session:
        found = ObjectRepository(session, kind, api_version).get(namespace, name)
    assert found is not None
    return found


def cli_plan(
    tmp_path: Path, manifests: list[dict[str, Any]], clusters: list[dict[str, Any]]
) -> dict[str, Any]:
    app, members = tmp_path / "app.yaml", tmp_path / "clusters.yaml"
    app.write_text(yaml.safe_dump_all(manifests))
    members.write_text(yaml.safe_dump_all(clusters))
    args = ["--config", str(PROFILE_FILE), "plan", "-f", str(app), "--clusters", str(members), "-o", "json"]
    answer = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert answer.exit_code == 0, answer.output
    [item] = json.loads(answer.output)["items"]
    return dict(item)


def test_every_plan_answers_what_the_scheduler_writes(harness: Harness, tmp_path: Path) -> None:
    settings = load_settings(PROFILE_FILE, data_dir=str(tmp_path / "data"))
    with harness.uow() as session:
        clusters, _ = ObjectRepository(session, "Cluster", "cluster.karmada.io/v1alpha1").list()
    placements = {}
    for template, placement in WORKLOADS:
        name = template["metadata"]["name"]
        harness.create(template)
        harness.create(policy(name, placement, [name]))
        stored_template = stored(harness, "Deployment", "apps/v1", "default", name)
        pp = stored(harness, "PropagationPolicy", "policy.karmada.io/v1alpha1", "default", name)
        config = engine_config(settings.scheduler)
        [offline] = plan_manifests([stored_template, pp], clusters, config, now=harness.clock.now())
        [live] = plan_live(harness.uow, settings, [stored_template], harness.clock.now())["items"]
        from_cli = cli_plan(tmp_path, [stored_template, pp], clusters)
        harness.run()
        written = harness.binding(f"{name}-deployment")
        assert offline == live
        assert offline["spec"] == written["spec"] == from_cli["spec"], name
        assert stored_status(offline["status"]) == written["status"], name
        [decision] = harness.decisions(f"{name}-deployment")
        assert decision.explanation == offline["status"]["schedulingExplanation"]
        assert from_cli["status"]["conditions"][0]["reason"] == written["status"]["conditions"][0]["reason"]
        placements[name] = harness.placement(f"{name}-deployment")
    # The profiles decided: mysql by free-memory ratio among the clusters that keep its disk hold; redis
    # needs twice its 6Gi free (big-busy and small-free hold one each, where 6Gi alone would fit two on
    # big-busy); the default class's strict cpu fits one 16-core replica per 32-core cluster.
    assert placements["mysql"] == {"small-free": 1}
    cache = placements["cache"]
    assert sum(cache.values()) == 5 and cache.get("big-busy", 0) <= 1 and cache.get("small-free", 0) <= 1
    assert placements["web"] == {"big-busy": 1, "small-free": 1, "full-disk": 1}


def test_the_same_workload_plans_elsewhere_without_the_profiles() -> None:
    """The profiles are what made mysql land on small-free: Karmada's defaults pick another cluster."""
    template, placement = WORKLOADS[0]
    template = {
        **template,
        "metadata": {**template["metadata"], "uid": "0c0ffee0-0000-4000-8000-000000000001"},
    }
    clusters = [{**obj, "status": status} for obj, status in MEMBERS]
    pp = policy("mysql", placement, ["mysql"])
    moment = datetime(2026, 3, 1, tzinfo=UTC)
    with_profiles = plan_manifests([template, pp], clusters, engine_config(load_settings(PROFILE_FILE).scheduler),
                                   now=moment)  # fmt: skip
    without = plan_manifests([template, pp], clusters, EngineConfig(resource_fit=False), now=moment)
    assert with_profiles[0]["spec"]["clusters"] == [{"name": "small-free", "replicas": 1}]
    assert without[0]["spec"]["clusters"] != with_profiles[0]["spec"]["clusters"]
