"""`config/examples/`: every file is accepted by a real server through `federation apply`, says what it
shows in a comment header, and pairs a Deployment with requests with the policy that places it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from federation.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"
FILES = sorted(EXAMPLES.glob("*.yaml"))


def test_the_examples_cover_every_placement_style() -> None:
    assert {f.name for f in FILES} >= {
        "duplicated.yaml",
        "divided-static-weight.yaml",
        "dynamic-weight.yaml",
        "aggregated.yaml",
        "workload-policy.yaml",
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_example_has_a_header_and_a_deployment_with_requests(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("# ")
    docs = [d for d in yaml.safe_load_all(text) if d]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert len(deployments) == 1
    container = deployments[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith("nginx") and container["resources"]["requests"]["cpu"]
    assert any(d["kind"] == "PropagationPolicy" for d in docs)


def test_every_example_is_accepted_by_the_server(federation_server: object) -> None:
    runner = CliRunner()
    for path in FILES:
        result = runner.invoke(cli, ["apply", "-f", str(path)], catch_exceptions=False)
        assert result.exit_code == 0, f"{path.name}: {result.output}"
        assert "created" in result.output
    listed = runner.invoke(cli, ["get", "pp", "-A"], catch_exceptions=False)
    assert listed.exit_code == 0
    for name in ("nginx-duplicated", "nginx-static-weight", "nginx-dynamic-weight", "nginx-aggregated"):
        assert name in listed.output
    assert "nginx-regions" in runner.invoke(cli, ["get", "wlp", "-A"], catch_exceptions=False).output
