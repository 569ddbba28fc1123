"""`federation join` as operators use it day to day: --region/--zone give the topology labels, and
`join NAME --kubeconfig F --update` replaces a cluster's credentials (rotated token, re-issued CA, moved
endpoint) without unjoining it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from federation.cli.main import cli
from federation.sim import RunningSimulator
from federation.store.clusters import ClusterRepository
from tests.conftest import RunningServer

REGION, ZONE = "topology.kubernetes.io/region", "topology.kubernetes.io/zone"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def member_kubeconfig(sim: RunningSimulator, path: Path) -> str:
    path.write_text(yaml.safe_dump(sim.kubeconfig))
    return str(path)


def cluster(server: RunningServer, name: str) -> dict[str, Any]:
    with server.client() as http:
        answer = http.get(f"/apis/cluster.karmada.io/v1alpha1/clusters/{name}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


def stored_token(server: RunningServer, name: str) -> str:
    ctx = server.process.api_context
    with ctx.uow() as session:
        stored = ClusterRepository(session).kubeconfig(name, ctx.secret_box)
    assert stored is not None
    return str(stored["users"][0]["user"]["token"])


def test_region_and_zone_set_the_topology_labels(
    federation_server: RunningServer, start_sim: Callable[..., RunningSimulator], tmp_path: Path
) -> None:
    sim = start_sim(name="m1")
    path = member_kubeconfig(sim, tmp_path / "m1.yaml")
    joined = run(
        "join", "m1", "--kubeconfig", path, "--region", "eu-west", "--zone", "eu-west-1a", "--provider", "aws"
    )
    assert joined.exit_code == 0, joined.output
    found = cluster(federation_server, "m1")
    assert found["metadata"]["labels"] == {REGION: "eu-west", ZONE: "eu-west-1a"}
    assert (found["spec"]["region"], found["spec"]["zone"], found["spec"]["provider"]) == (
        "eu-west",
        "eu-west-1a",
        "aws",
    )
    # An explicit label of the same key wins over the one the region gives.
    other = member_kubeconfig(start_sim(name="m2"), tmp_path / "m2.yaml")
    assert (
        run("join", "m2", "--kubeconfig", other, "--region", "r", "--label", f"{REGION}=custom").exit_code
        == 0
    )
    assert cluster(federation_server, "m2")["metadata"]["labels"] == {REGION: "custom"}


def test_update_replaces_the_credentials_and_keeps_the_cluster(
    federation_server: RunningServer, start_sim: Callable[..., RunningSimulator], tmp_path: Path
) -> None:
    old = start_sim(name="m1", token="first-token")
    old_path = member_kubeconfig(old, tmp_path / "old.yaml")
    assert run("join", "m1", "--kubeconfig", old_path, "--region", "r1", "--label", "env=prod").exit_code == 0
    assert run("taint", "cluster", "m1", "dedicated=gpu:NoSchedule").exit_code == 0
    uid, old_url = cluster(federation_server, "m1")["metadata"]["uid"], old.url
    # The member comes back with a rotated token, a new CA and on another port.
    new = start_sim(name="m1", token="rotated-token")
    old.stop()
    new_path = member_kubeconfig(new, tmp_path / "new.yaml")
    updated = run("join", "m1", "--kubeconfig", new_path, "--update", "--zone", "z2", "--label", "tier=gold")
    assert updated.exit_code == 0, updated.output
    assert updated.output == "cluster/m1 updated (credentials replaced)\n"
    found = cluster(federation_server, "m1")
    assert found["metadata"]["uid"] == uid  # the same Cluster, never unjoined
    assert found["spec"]["apiEndpoint"] == new.url != old_url
    assert (found["spec"]["region"], found["spec"]["zone"]) == ("r1", "z2")
    assert found["metadata"]["labels"] == {REGION: "r1", ZONE: "z2", "env": "prod", "tier": "gold"}
    assert {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"} in found["spec"]["taints"]
    ready = next(c for c in found["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert stored_token(federation_server, "m1") == "rotated-token"


def test_update_refusals_leave_the_cluster_as_it_was(
    federation_server: RunningServer, start_sim: Callable[..., RunningSimulator], tmp_path: Path
) -> None:
    sim = start_sim(name="m1")
    path = member_kubeconfig(sim, tmp_path / "m1.yaml")
    missing = run("join", "ghost", "--kubeconfig", path, "--update")
    assert missing.exit_code == 1
    assert missing.output == 'Error from server (NotFound): clusters.cluster.karmada.io "ghost" not found\n'
    assert run("join", "m1", "--kubeconfig", path).exit_code == 0
    before = cluster(federation_server, "m1")["spec"]
    wrong = sim.kubeconfig
    wrong["users"][0]["user"]["token"] = "not-the-token"
    wrong_path = tmp_path / "wrong.yaml"
    wrong_path.write_text(yaml.safe_dump(wrong))
    refused = run("join", "m1", "--kubeconfig", str(wrong_path), "--update")
    assert refused.exit_code == 1 and refused.output.startswith("Error from server (BadRequest): kubeconfig:")
    assert cluster(federation_server, "m1")["spec"] == before
    assert stored_token(federation_server, "m1") == sim.token
    assert run("join", "edge", "--mode", "Pull").exit_code == 0
    pull = run("join", "edge", "--kubeconfig", path, "--update")
    assert pull.exit_code == 1 and "is in Pull mode" in pull.output
    usage = run("join", "m1", "--update", "--mode", "Pull", "--kubeconfig", path)
    assert usage.exit_code == 2 and "a Pull cluster's agent holds its own" in usage.output
