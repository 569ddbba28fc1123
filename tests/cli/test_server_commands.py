"""`federation serve`, `db upgrade` and `token create` as a user runs them: real processes, real sockets."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx

from federation.apiclient import tls_verify
from federation.cli.clientconfig import ClientFlags, resolve

FEDERATION = [sys.executable, "-m", "federation"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    env["KUBECONFIG"] = str(tmp_path / "data" / "federation.kubeconfig")
    env["FEDERATION_CLIENT_CONFIG"] = str(tmp_path / "client.yaml")  # never the user's own (legacy) file
    return env


def _wait_for_config(path: Path, process: subprocess.Popen, previous: str | None = None) -> dict:
    """The server URL and token in the kubeconfig `serve` writes, once it names a new server."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read() if process.stdout else "serve exited"
        if path.exists():
            config = resolve(ClientFlags(kubeconfig=str(path)))
            if config.server != previous:
                return {"server": config.server, "token": config.token, "ca": config.ca_pem}
        time.sleep(0.05)
    raise AssertionError("serve never wrote the kubeconfig")


def _serve(tmp_path: Path) -> subprocess.Popen:
    command = [*FEDERATION, "serve", "--port", "0", "--data-dir", str(tmp_path / "data")]
    return subprocess.Popen(
        command, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _wait_ready(url: str, ca: bytes | None) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2, verify=tls_verify(ca)).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{url} never became ready")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=30)


def test_first_start_creates_admin_token_and_kubeconfig_later_starts_keep_it(tmp_path):
    config_path = tmp_path / "data" / "federation.kubeconfig"
    first = _serve(tmp_path)
    try:
        config = _wait_for_config(config_path, first)
        assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
        assert config["server"].startswith("https://127.0.0.1:") and config["ca"]
        _wait_ready(config["server"], config["ca"])
        listed = subprocess.run(
            [*FEDERATION, "get", "pp", "-A"], env=_env(tmp_path), capture_output=True, text=True
        )
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.strip() == "No resources found."
    finally:
        _stop(first)
    key_file = tmp_path / "data" / "secret.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    second = _serve(tmp_path)
    try:
        again = _wait_for_config(config_path, second, previous=config["server"])
        assert again["token"] == config["token"] and again["ca"] == config["ca"]  # the CA is kept
        _wait_ready(again["server"], again["ca"])
        headers = {"Authorization": f"Bearer {again['token']}"}
        verify = tls_verify(again["ca"])
        assert httpx.get(f"{again['server']}/apis", headers=headers, verify=verify).status_code == 200
    finally:
        _stop(second)


def test_db_upgrade_and_token_create(tmp_path):
    env = _env(tmp_path)
    data = ["--data-dir", str(tmp_path / "data")]
    upgraded = subprocess.run([*FEDERATION, "db", "upgrade", *data], env=env, capture_output=True, text=True)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "database at revision" in upgraded.stdout
    made = subprocess.run(
        [*FEDERATION, "token", "create", "--role", "viewer", *data], env=env, capture_output=True, text=True
    )
    assert made.returncode == 0 and made.stdout.strip().startswith("fed_")
    refused = subprocess.run(
        [*FEDERATION, "token", "create", "--role", "agent", *data], env=env, capture_output=True, text=True
    )
    assert refused.returncode == 2 and "--cluster is required" in refused.stderr
    duplicate = subprocess.run(
        [*FEDERATION, "token", "create", "--role", "viewer", *data], env=env, capture_output=True, text=True
    )
    assert duplicate.returncode == 1 and "already exists" in duplicate.stderr
