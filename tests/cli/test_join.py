"""`federation join/unjoin/taint/cordon/uncordon` against a real server and simulated members."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner, Result

from federation.cli.cmd_join import TaintChange, changed_taints, parse_taint
from federation.cli.main import cli
from federation.sim import RunningSimulator
from tests.conftest import RunningServer

NOW = "2026-01-01T00:00:00Z"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def kubeconfig_with_files(sim: RunningSimulator, folder: Path) -> Path:
    """The simulator's kubeconfig with its CA and token in files next to it (relative paths)."""
    config = sim.kubeconfig
    cluster = config["clusters"][0]["cluster"]
    (folder / "ca.crt").write_bytes(base64.b64decode(cluster.pop("certificate-authority-data")))
    cluster["certificate-authority"] = "ca.crt"
    user = config["users"][0]["user"]
    (folder / "token").write_text(user.pop("token"))
    user["tokenFile"] = "token"
    path = folder / "member.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def cluster(server: RunningServer, name: str) -> dict[str, Any]:
    with server.client() as http:
        answer = http.get(f"/apis/cluster.karmada.io/v1alpha1/clusters/{name}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


def test_join_inlines_files_and_unjoin(
    federation_server: RunningServer, start_sim: Callable[..., RunningSimulator], tmp_path: Path
) -> None:
    sim = start_sim(name="m1")
    path = kubeconfig_with_files(sim, tmp_path)
    joined = run("join", "m1", "--kubeconfig", str(path), "--region", "r1", "--label", "env=prod")
    assert joined.exit_code == 0, joined.output
    assert joined.output == "cluster/m1 joined\n"
    created = cluster(federation_server, "m1")
    assert created["spec"]["region"] == "r1"
    assert created["metadata"]["labels"] == {"env": "prod", "topology.kubernetes.io/region": "r1"}
    assert run("get", "clusters").output.splitlines()[1].startswith("m1")
    again = run("join", "m1", "--kubeconfig", str(path))
    assert again.exit_code == 1
    assert (
        again.output.strip()
        == 'Error from server (AlreadyExists): clusters.cluster.karmada.io "m1" already exists'
    )
    unjoined = run("unjoin", "m1")
    assert unjoined.exit_code == 0 and unjoined.output == "cluster/m1 unjoined\n"
    missing = run("unjoin", "m1")
    assert missing.exit_code == 1 and "NotFound" in missing.output


def test_join_errors_are_one_line(
    federation_server: RunningServer, start_sim: Callable[..., RunningSimulator], tmp_path: Path
) -> None:
    absent = run("join", "m1", "--kubeconfig", str(tmp_path / "absent.yaml"))
    assert absent.exit_code == 1
    assert absent.output.startswith("Error: kubeconfig ") and len(absent.output.splitlines()) == 1
    sim = start_sim(name="m1")
    path = kubeconfig_with_files(sim, tmp_path)
    wrong_context = run("join", "m1", "--kubeconfig", str(path), "--context", "other")
    assert wrong_context.exit_code == 1 and "no context 'other'" in wrong_context.output
    sim.stop()
    unreachable = run("join", "m1", "--kubeconfig", str(path))
    assert unreachable.exit_code == 1 and len(unreachable.output.splitlines()) == 1
    assert unreachable.output.startswith(
        'Error from server (ServiceUnavailable): cluster "m1" is not reachable'
    )
    assert run("get", "clusters").output.strip() == "No resources found."
    no_config = run("join", "m1")
    assert no_config.exit_code == 2 and "--kubeconfig is required" in no_config.output


def test_pull_join_and_forced_unjoin(federation_server: RunningServer) -> None:
    joined = run("join", "edge", "--mode", "Pull", "--zone", "z9")
    assert joined.exit_code == 0, joined.output
    assert cluster(federation_server, "edge")["spec"] == {"syncMode": "Pull", "zone": "z9"}
    forced = run("unjoin", "edge", "--force")
    assert forced.exit_code == 0 and forced.output == "cluster/edge unjoined\n"


def test_taint_cordon_uncordon(federation_server: RunningServer) -> None:
    assert run("join", "edge", "--mode", "Pull").exit_code == 0
    assert run("taint", "cluster", "edge", "dedicated=gpu:NoSchedule").output == "cluster/edge tainted\n"
    duplicate = run("taint", "cluster", "edge", "dedicated=cpu:NoSchedule")
    assert duplicate.exit_code == 1 and "--overwrite" in duplicate.output
    overwritten = run("taint", "clusters", "edge", "dedicated=cpu:NoSchedule", "--overwrite")
    assert overwritten.output == "cluster/edge tainted\n"
    assert {"key": "dedicated", "value": "cpu", "effect": "NoSchedule"} in cluster(federation_server, "edge")[
        "spec"
    ]["taints"]
    assert run("cordon", "edge").output == "cluster/edge cordoned\n"
    assert run("cordon", "edge").output == "cluster/edge already cordoned\n"
    keys = [(t["key"], t["effect"]) for t in cluster(federation_server, "edge")["spec"]["taints"]]
    assert ("cluster.karmada.io/unschedulable", "NoSchedule") in keys
    assert run("uncordon", "edge").output == "cluster/edge uncordoned\n"
    assert run("uncordon", "edge").output == "cluster/edge already uncordoned\n"
    assert run("taint", "cluster", "edge", "dedicated-").output == "cluster/edge untainted\n"
    user_taints = [
        t for t in cluster(federation_server, "edge")["spec"].get("taints") or [] if "karmada" not in t["key"]
    ]
    assert user_taints == []
    gone = run("taint", "cluster", "edge", "dedicated:NoSchedule-")
    assert gone.exit_code == 1 and 'taint "dedicated:NoSchedule" not found' in gone.output
    assert run("taint", "cluster", "edge", "a=b:Sometimes").exit_code == 2
    assert run("taint", "node", "edge", "a=b:NoSchedule").exit_code == 2
    assert run("cordon", "nope").exit_code == 1


def test_parse_taint_follows_kubectl() -> None:
    assert parse_taint("k=v:NoExecute") == TaintChange("k", "v", "NoExecute", remove=False)
    assert parse_taint("k:NoSchedule") == TaintChange("k", None, "NoSchedule", remove=False)
    assert parse_taint("k:NoSchedule-") == TaintChange("k", None, "NoSchedule", remove=True)
    assert parse_taint("k-") == TaintChange("k", None, None, remove=True)
    for bad in ("k=v", "=v:NoSchedule", "k:Never"):
        with pytest.raises(click.BadParameter):
            parse_taint(bad)


def test_changed_taints() -> None:
    current = [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute", "timeAdded": NOW}]
    removed, verb = changed_taints(current, [parse_taint("a-")], False, NOW)
    assert removed == [] and verb == "untainted"
    added, verb = changed_taints([], [parse_taint("b=1:NoExecute")], False, NOW)
    assert (
        added == [{"key": "b", "value": "1", "effect": "NoExecute", "timeAdded": NOW}] and verb == "tainted"
    )
    both, verb = changed_taints(
        current, [parse_taint("a:NoSchedule-"), parse_taint("c:PreferNoSchedule")], False, NOW
    )
    assert [t["key"] for t in both] == ["a", "c"] and verb == "modified"
