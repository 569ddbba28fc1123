"""Quantities in CLI output print as kubectl prints them: a 128Mi request is `128Mi`, never `'134217728'`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from federation.cli.main import cli
from tests.cli.test_plan import STATIC, member, write


def test_plan_prints_the_request_as_written(tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 3,
            "template": {
                "spec": {"containers": [{"name": "web", "resources": {"requests": {"memory": "128Mi"}}}]}
            },
        },
    }
    app = write(tmp_path, "app.yaml", [deployment, STATIC])
    clusters = write(tmp_path, "clusters.yaml", [member("member1"), member("member2")])
    shown = CliRunner().invoke(cli, ["plan", "-f", app, "--clusters", clusters, "-o", "yaml"])
    assert shown.exit_code == 0, shown.output
    assert "memory: 128Mi" in shown.output and "134217728" not in shown.output
    [binding] = yaml.safe_load(shown.output)["items"]
    assert binding["spec"]["replicaRequirements"] == {"resourceRequest": {"memory": "128Mi"}}
    as_json = json.loads(
        CliRunner().invoke(cli, ["plan", "-f", app, "--clusters", clusters, "-o", "json"]).output
    )
    assert as_json["items"][0]["spec"]["replicaRequirements"]["resourceRequest"]["memory"] == "128Mi"
