"""``federation sim`` as a process: writes the kubeconfig, prints the URL, serves until interrupted."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import yaml

from federation.members.client import KubernetesMemberClient
from tests.members.helpers import wait_for

_RUN = "from federation.cli.cmd_sim import sim_command; sim_command()"


def test_sim_command_serves_a_member(tmp_path: Path) -> None:
    out = tmp_path / "member.yaml"
    args = [
        "--name",
        "edge",
        "--port",
        "0",
        "--nodes",
        "2",
        "--node-cpu",
        "2",
        "--node-memory",
        "4Gi",
        "--node-gpu",
        "1",
        "--region",
        "r9",
        "--zone",
        "z9",
        "--kubeconfig-out",
        str(out),
        "--token",
        "tok",
    ]
    process = subprocess.Popen([sys.executable, "-c", _RUN, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        assert "serving at https://127.0.0.1:" in lines[1]
        kubeconfig = yaml.safe_load(out.read_text())
        assert kubeconfig["current-context"] == "edge"
        assert kubeconfig["users"][0]["user"]["token"] == "tok"
        client = KubernetesMemberClient("edge", kubeconfig)
        wait_for(lambda: client.probe().ok, what="sim process healthy")
        summary = client.resource_summary()
        assert summary.resource_summary["allocatable"]["nvidia.com/gpu"] == "2"
        node = client.get("v1", "Node", None, "edge-node-0")
        assert node is not None and node["metadata"]["labels"]["topology.kubernetes.io/zone"] == "z9"
        client.close()
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
