"""Fixtures shared by the API tests that drive the server with the real kubectl."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


@pytest.fixture
def kubectl(federation_server: Any, tmp_path: Path) -> Any:
    """``kubectl(*args)``: the real kubectl with the kubeconfig `serve` wrote (TLS, its CA and token)."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [
            KUBECTL,
            "--kubeconfig",
            str(federation_server.kubeconfig),
            "--cache-dir",
            str(tmp_path / "kube-cache"),
            "--request-timeout=20s",
            *args,
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    return run
