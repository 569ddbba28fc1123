"""The simulator driven by ``kubectl`` (plain ``kubectl apply -f``, get, delete) through the written kubeconfig."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.members.kubeconfig import write_kubeconfig
from federation.sim import RunningSimulator
from tests.members.helpers import deployment, wait_for

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def _kubectl(kubeconfig: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        "--cache-dir",
        str(cache),
        "--request-timeout=10s",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def kubectl(sim: RunningSimulator, tmp_path: Path) -> Any:
    kubeconfig = tmp_path / "kubeconfig.yaml"
    write_kubeconfig(str(kubeconfig), sim.kubeconfig)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return _kubectl(kubeconfig, tmp_path / "cache", *args)

    return run


def test_kubectl_apply_get_ready_delete(kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(deployment("web", 2)))
    applied = kubectl("apply", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    assert "deployment.apps/web created" in applied.stdout

    def ready() -> dict[str, Any] | None:
        shown = kubectl("get", "deploy", "web", "-o", "json")
        assert shown.returncode == 0, shown.stderr
        status = json.loads(shown.stdout)["status"]
        return status if status.get("readyReplicas") == 2 else None

    status = wait_for(ready, what="kubectl shows 2 ready replicas")
    assert status["availableReplicas"] == 2

    manifest.write_text(yaml.safe_dump(deployment("web", 3)))
    again = kubectl("apply", "-f", str(manifest))
    assert again.returncode == 0 and "configured" in again.stdout, again.stderr
    table = kubectl("get", "deploy")
    assert table.returncode == 0 and "web" in table.stdout

    deleted = kubectl("delete", "-f", str(manifest))
    assert deleted.returncode == 0, deleted.stderr
    assert "No resources found" in kubectl("get", "pods").stderr + kubectl("get", "pods").stdout


def test_kubectl_server_side_apply_and_nodes(kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "api.yaml"
    manifest.write_text(yaml.safe_dump(deployment("api", 1)))
    applied = kubectl("apply", "--server-side", "-f", str(manifest))
    assert applied.returncode == 0 and "serverside-applied" in applied.stdout, applied.stderr
    nodes = kubectl("get", "nodes", "-o", "json")
    assert nodes.returncode == 0, nodes.stderr
    assert len(json.loads(nodes.stdout)["items"]) == 3
    scaled = kubectl("scale", "deploy/api", "--replicas=2")
    assert scaled.returncode == 0, scaled.stderr
    rollout = kubectl("rollout", "status", "deploy/api", "--timeout=20s")
    assert rollout.returncode == 0, rollout.stderr


def test_kubectl_with_wrong_token_is_refused(sim: RunningSimulator, tmp_path: Path) -> None:
    kubeconfig = sim.kubeconfig
    kubeconfig["users"][0]["user"]["token"] = "wrong"
    path = tmp_path / "bad.yaml"
    write_kubeconfig(str(path), kubeconfig)
    result = _kubectl(path, tmp_path / "cache", "get", "nodes")
    assert result.returncode != 0
    assert "provide credentials" in result.stderr or "Unauthorized" in result.stderr


def test_kubectl_get_watch_prints_each_change(kubectl: Any, sim: RunningSimulator, tmp_path: Path) -> None:
    """``kubectl get -w``: a Table LIST, then a Table WATCH from its resourceVersion."""
    kubeconfig = tmp_path / "kubeconfig.yaml"  # written by the kubectl fixture
    command = ["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
    manifests = {}
    for name in ("before", "during"):
        manifests[name] = tmp_path / f"{name}.yaml"
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}
        manifests[name].write_text(yaml.safe_dump(body))
    assert kubectl("apply", "-f", str(manifests["before"])).returncode == 0
    watching = subprocess.Popen(
        [*command, "get", "configmaps", "--watch", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in watching.stdout or ()], daemon=True)
    reader.start()
    try:

        def next_line() -> list[str]:
            return lines.get(timeout=10).split()

        assert next_line()[:2] == ["EVENT", "NAME"]
        assert next_line()[:2] == ["ADDED", "before"]
        assert kubectl("apply", "-f", str(manifests["during"])).returncode == 0
        assert next_line()[:3] == ["ADDED", "during", "1"]
        assert kubectl("delete", "-f", str(manifests["during"])).returncode == 0
        assert next_line()[:2] == ["DELETED", "during"]
    finally:
        watching.terminate()
        watching.wait(timeout=10)
