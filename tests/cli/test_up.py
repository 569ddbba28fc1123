"""`federation up`: simulators + server + controllers in one process, members joined, a clean stop, and a
second start on the same data directory that re-points the members."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner

from federation.apiclient import tls_verify
from federation.cli import cmd_up
from federation.cli.cmd_up import UpStack, member_specs, start_up
from federation.cli.main import cli
from federation.settings import load_settings
from federation.store.clusters import ClusterRepository
from tests.conftest import point_cli_at

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"


@pytest.fixture(autouse=True)
def _isolated_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    point_cli_at(monkeypatch, tmp_path / "data" / "federation.kubeconfig")
    monkeypatch.delenv("FEDERATION_DATABASE_URL", raising=False)


def start(tmp_path: Path, members: int = 3) -> UpStack:
    settings = load_settings(data_dir=str(tmp_path / "data"), api={"port": 0})
    return start_up(settings, members=members, ready_delay=0.1)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[UpStack]:
    running = start(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def clusters(stack: UpStack, token: str) -> dict[str, dict[str, Any]]:
    tls = stack.process.tls
    assert tls is not None  # HTTPS by default
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=stack.process.url, headers=headers, verify=tls_verify(tls.ca_pem)) as http:
        items = http.get(CLUSTERS).json()["items"]
    return {c["metadata"]["name"]: c for c in items}


def test_member_shapes_differ_and_repeat_beyond_three() -> None:
    specs = member_specs(5)
    assert [s.name for s in specs] == ["member1", "member2", "member3", "member4", "member5"]
    assert [s.region for s in specs] == ["region-a", "region-b", "region-c", "region-d", "region-e"]
    assert specs[2].gpus == 1 and specs[2].labels()["accelerator"] == "nvidia-gpu"
    assert specs[3].cpu == specs[0].cpu and specs[4].nodes == specs[1].nodes


def test_up_joins_three_ready_members_and_configures_the_cli(stack: UpStack, tmp_path: Path) -> None:
    token = stack.process.admin_token
    kubeconfig = yaml.safe_load((tmp_path / "data" / "federation.kubeconfig").read_text())
    assert token and kubeconfig["users"][0]["user"]["token"] == token
    assert kubeconfig["clusters"][0]["cluster"]["server"] == stack.process.url.replace("http://", "https://")
    members = yaml.safe_load(stack.members_kubeconfig.read_text())
    assert [c["name"] for c in members["contexts"]] == ["member1", "member2", "member3"]
    assert [c["cluster"]["server"] for c in members["clusters"]] == [sim.url for _, sim in stack.members]
    found = clusters(stack, token)
    assert sorted(found) == ["member1", "member2", "member3"]
    for spec, sim in stack.members:
        cluster = found[spec.name]
        assert cluster["spec"]["syncMode"] == "Push" and cluster["spec"]["apiEndpoint"] == sim.url
        assert cluster["spec"]["region"] == spec.region
        assert cluster["metadata"]["labels"]["topology.kubernetes.io/region"] == spec.region
        ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True"
    assert found["member2"]["status"]["resourceSummary"]["allocatable"]["cpu"] == "24"
    assert found["member3"]["status"]["resourceSummary"]["allocatable"]["nvidia.com/gpu"] == "1"


def test_stop_takes_everything_down(tmp_path: Path) -> None:
    running = start(tmp_path, members=1)
    url, member_url = running.process.url, running.members[0][1].url
    running.stop()
    for target in (f"{url}/healthz", f"{member_url}/healthz"):
        with pytest.raises(httpx.TransportError):
            httpx.get(target, verify=False, timeout=2)


def test_a_second_up_on_the_same_data_dir_repoints_the_members(tmp_path: Path) -> None:
    first = start(tmp_path, members=2)
    token = first.process.admin_token
    assert token is not None
    old_endpoints = {spec.name: sim.url for spec, sim in first.members}
    first.stop()

    second = start(tmp_path, members=2)
    try:
        assert second.process.admin_token is None  # the first token stays valid
        assert sorted(second.rejoined) == ["member1", "member2"]
        found = clusters(second, token)
        for spec, sim in second.members:
            assert found[spec.name]["spec"]["apiEndpoint"] == sim.url != old_endpoints[spec.name]
        ctx = second.process.api_context
        assert ctx is not None
        with ctx.uow() as session:  # the controllers reach the new members with the new credentials
            stored = {
                spec.name: ClusterRepository(session).kubeconfig(spec.name, ctx.secret_box)
                for spec, _ in second.members
            }
        for spec, sim in second.members:
            assert stored[spec.name]["users"][0]["user"]["token"] == sim.token
    finally:
        second.stop()


def test_the_up_command_prints_how_to_use_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd_up, "wait_for_stop", lambda: time.sleep(0))
    result = CliRunner().invoke(
        cli,
        ["up", "--data-dir", str(tmp_path / "data"), "--port", "0", "--members", "2", "--ready-delay", "0.1"],
    )
    assert result.exit_code == 0, result.output
    data = tmp_path / "data"
    assert "federation is up: API server at https://127.0.0.1:" in result.output
    assert "member1" in result.output and "member2" in result.output and "member3" not in result.output
    assert f"export KUBECONFIG={data / 'federation.kubeconfig'}" in result.output
    assert (
        f"kubectl --kubeconfig {data / 'members.kubeconfig'} --context member1 get deploy -A" in result.output
    )
    assert "federation apply -f config/examples/divided-static-weight.yaml" in result.output
    assert "federation get rb" in result.output and "federation get works -A" in result.output
    assert result.output.rstrip().endswith("stopped")
