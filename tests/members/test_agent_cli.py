"""`federation agent`: flags, the server and token from the usual places, and the checks it makes before
looping (a wrong token, an unknown cluster or a Push cluster is one clear error)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from federation.cli import cmd_agent
from federation.cli.main import cli
from federation.members.agent import Agent
from federation.sim import RunningSimulator
from tests.members.test_agent_support import (
    ApiServer,
    deployment_manifest,
    get_work,
    put_work,
    start_api_server,
    work,
)


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    for name in ("FEDERATION_SERVER", "FEDERATION_TOKEN", "FEDERATION_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none.yaml"))
    running = start_api_server(tmp_path)
    try:
        running.join_pull("edge1")
        yield running
    finally:
        running.process.stop()


@pytest.fixture
def kubeconfig(sim: RunningSimulator, tmp_path: Path) -> str:
    path = tmp_path / "member.yaml"
    path.write_text(yaml.safe_dump(sim.kubeconfig))
    return str(path)


def run_agent(api: ApiServer, token: str, cluster: str, kubeconfig: str) -> Result:
    """The federation's kubeconfig (its HTTPS server and CA) with the agent's token over its admin one;
    the agent's own --kubeconfig is the member's."""
    federation = ["--kubeconfig", str(api.process.kubeconfig_file), "--token", token]
    return CliRunner().invoke(cli, [*federation, "agent", "--cluster", cluster, "--kubeconfig", kubeconfig])


def test_the_agent_command_syncs_the_clusters_works(
    api: ApiServer, kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    put_work(api, work("edge1", "web-abc", deployment_manifest("web", 1)))

    def one_pass(agent: Agent) -> None:  # instead of looping until Ctrl-C
        agent.run_once()
        agent.stop()

    monkeypatch.setattr(cmd_agent, "_run_until_signalled", one_pass)
    result = run_agent(api, api.token("agent", "edge1"), "edge1", kubeconfig)

    assert result.exit_code == 0, result.output
    assert "agent of cluster edge1 syncing Works from" in result.output
    assert get_work(api, "edge1", "web-abc")["status"]["manifestStatuses"]


@pytest.mark.parametrize(
    ("cluster", "token_role", "message"),
    [
        ("edge2", "edge1", "403"),
        ("ghost", "admin", "404"),
    ],
)
def test_it_refuses_a_cluster_its_token_cannot_serve(
    api: ApiServer, kubeconfig: str, cluster: str, token_role: str, message: str
) -> None:
    token = api.token("agent", token_role) if token_role != "admin" else api.process.admin_token or ""
    result = run_agent(api, token, cluster, kubeconfig)
    assert result.exit_code == 1
    assert f"cannot serve cluster '{cluster}'" in result.output and message in result.output


def test_it_refuses_a_push_cluster(api: ApiServer, sim: RunningSimulator, kubeconfig: str) -> None:
    with api.client() as http:
        joined = http.post(
            "/federation/v1/clusters/join", json={"name": "pushed", "kubeconfig": sim.kubeconfig}
        )
    assert joined.status_code == 201, joined.text
    result = run_agent(api, api.token("agent", "pushed"), "pushed", kubeconfig)
    assert result.exit_code == 1 and "is in Push mode" in result.output


def test_it_needs_a_token_and_a_usable_kubeconfig(api: ApiServer, kubeconfig: str, tmp_path: Path) -> None:
    no_token = CliRunner().invoke(
        cli, ["--server", api.url, "agent", "--cluster", "edge1", "--kubeconfig", kubeconfig]
    )
    assert no_token.exit_code == 2 and "agent token is required" in no_token.output
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Config\n")
    result = run_agent(api, "t", "edge1", str(broken))
    assert result.exit_code == 1 and "cannot use the kubeconfig" in result.output
