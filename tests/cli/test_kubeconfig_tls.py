"""The federation over HTTPS with the kubeconfig `serve` writes: real kubectl and the official Python client
use it unchanged (kubectl sends a bearer token only over TLS), and the `federation` CLI chooses servers the
way kubectl does (--kubeconfig, KUBECONFIG first-wins, --context, current-context)."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result
from kubernetes import client as kube
from kubernetes import config as kube_config

from federation.apiclient import tls_verify
from federation.cli.main import cli
from tests.conftest import RunningServer, point_cli_at, start_server

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
NAMESPACES = "/api/v1/namespaces"


def kubectl(kubeconfig: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), "--request-timeout=20s"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=60, check=False)


def bare_cluster(name: str) -> dict[str, Any]:
    spec = {"syncMode": "Push", "apiEndpoint": f"https://{name}.example:6443"}
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": spec,
    }


def namespace(server: RunningServer, name: str) -> None:
    with server.client() as http:
        answer = http.post(
            NAMESPACES, json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        assert answer.status_code == 201, answer.text


def test_serve_writes_a_private_kubeconfig_with_the_ca_the_url_and_the_token(
    federation_server: RunningServer,
) -> None:
    path = federation_server.kubeconfig
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config = yaml.safe_load(path.read_text())
    assert config["current-context"] == "federation"
    [context] = config["contexts"]
    assert context == {"name": "federation", "context": {"cluster": "federation", "user": "federation-admin"}}
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == federation_server.url and cluster["server"].startswith("https://127.0.0.1:")
    ca = base64.b64decode(cluster["certificate-authority-data"])
    assert config["users"][0]["user"] == {"token": federation_server.admin_token}
    # The certificate names localhost as well as 127.0.0.1, and only that CA is needed to trust it.
    by_name = federation_server.url.replace("127.0.0.1", "localhost")
    assert httpx.get(f"{by_name}/readyz", verify=tls_verify(ca)).status_code == 200
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{federation_server.url}/readyz")  # the system roots do not know our CA


def test_kubectl_uses_the_written_kubeconfig_and_sends_the_token(
    federation_server: RunningServer, tmp_path: Path
) -> None:
    with federation_server.client() as http:
        assert http.post(CLUSTERS, json=bare_cluster("member1")).status_code == 201
    path, cache = federation_server.kubeconfig, tmp_path / "cache"
    listed = kubectl(path, cache, "get", "clusters")
    assert listed.returncode == 0, listed.stderr
    assert "member1" in listed.stdout
    namespace(federation_server, "team-a")
    namespaces = kubectl(path, cache, "get", "namespaces", "-o", "name")
    assert namespaces.returncode == 0, namespaces.stderr
    assert "namespace/team-a" in namespaces.stdout.split()
    # A wrong token is refused: the token kubectl sent above was the kubeconfig's.
    wrong = yaml.safe_load(path.read_text())
    wrong["users"][0]["user"]["token"] = "fed_not-the-token"
    wrong_path = tmp_path / "wrong.kubeconfig"
    wrong_path.write_text(yaml.safe_dump(wrong))
    refused = kubectl(wrong_path, cache, "get", "clusters")
    assert refused.returncode == 1 and "You must be logged in to the server" in refused.stderr


def test_the_official_python_client_loads_the_kubeconfig(federation_server: RunningServer) -> None:
    with federation_server.client() as http:
        assert http.post(CLUSTERS, json=bare_cluster("member1")).status_code == 201
    configuration = kube.Configuration()
    kube_config.load_kube_config(
        config_file=str(federation_server.kubeconfig), client_configuration=configuration
    )
    assert configuration.verify_ssl and configuration.ssl_ca_cert  # verified with the kubeconfig's CA
    with kube.ApiClient(configuration) as api:
        clusters = kube.CustomObjectsApi(api).list_cluster_custom_object(
            "cluster.karmada.io", "v1alpha1", "clusters"
        )
        assert [c["metadata"]["name"] for c in clusters["items"]] == ["member1"]
        core = kube.CoreV1Api(api)
        # No api_version or kind: the client leaves them out of the body, the server takes them from the URL.
        body = kube.V1ConfigMap(metadata=kube.V1ObjectMeta(name="settings"), data={"mode": "tls"})
        core.create_namespaced_config_map("default", body)
        names = [c.metadata.name for c in core.list_namespaced_config_map("default").items]
        assert names == ["settings"]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def two_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[RunningServer, RunningServer]]:
    """Two federations in two data directories, each with a namespace only it has."""
    point_cli_at(monkeypatch, tmp_path / "none.kubeconfig")
    first = start_server(tmp_path / "a")
    try:
        written = first.kubeconfig.read_text()
        second = start_server(tmp_path / "b")
        try:
            assert first.kubeconfig.read_text() == written  # a second serve leaves the first's config alone
            namespace(first, "only-a")
            namespace(second, "only-b")
            yield first, second
        finally:
            second.process.stop()
    finally:
        first.process.stop()


def found(result: Result, name: str) -> bool:
    """Whether `federation get ns NAME` found it on the server the CLI chose (else it said NotFound)."""
    if result.exit_code == 0:
        assert name in result.output
        return True
    assert result.exit_code == 1 and "(NotFound)" in result.output, result.output
    return False


def renamed(server: RunningServer, name: str) -> dict[str, Any]:
    """The server's kubeconfig with its cluster, user and context all called ``name``."""
    config = yaml.safe_load(server.kubeconfig.read_text())
    config["clusters"][0]["name"] = config["users"][0]["name"] = config["contexts"][0]["name"] = name
    config["contexts"][0]["context"] = {"cluster": name, "user": name}
    config["current-context"] = name
    return dict(config)


def test_kubeconfig_list_first_file_wins(
    two_servers: tuple[RunningServer, RunningServer], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first, second = two_servers
    missing = tmp_path / "missing.kubeconfig"
    monkeypatch.setenv(
        "KUBECONFIG", os.pathsep.join([str(missing), str(first.kubeconfig), str(second.kubeconfig)])
    )
    assert found(run("get", "ns", "only-a"), "only-a")  # both files name the context "federation": a's wins
    assert not found(run("get", "ns", "only-b"), "only-b")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(second.kubeconfig), str(first.kubeconfig)]))
    assert found(run("get", "ns", "only-b"), "only-b")


def test_kubeconfig_and_context_flags_choose_the_server(
    two_servers: tuple[RunningServer, RunningServer], tmp_path: Path
) -> None:
    first, second = two_servers
    combined = renamed(first, "a")
    other = renamed(second, "b")
    for section in ("clusters", "users", "contexts"):
        combined[section] += other[section]
    path = tmp_path / "combined.kubeconfig"
    path.write_text(yaml.safe_dump(combined))
    assert found(run("--kubeconfig", str(path), "get", "ns", "only-a"), "only-a")  # current-context a
    assert found(run("--kubeconfig", str(path), "--context", "b", "get", "ns", "only-b"), "only-b")
    # kubectl takes the flags after the verb too
    assert found(run("get", "ns", "only-b", "--kubeconfig", str(path), "--context", "b"), "only-b")
    assert not found(run("get", "ns", "only-a", "--kubeconfig", str(path), "--context", "b"), "only-a")
    unknown = run("--kubeconfig", str(path), "--context", "c", "get", "ns")
    assert unknown.exit_code == 1
    assert unknown.output.startswith(f'error: context "c" does not exist in {path} (contexts: a, b)')


def test_a_server_without_the_ca_is_refused_with_kubectls_words(
    federation_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none.kubeconfig"))
    token = federation_server.admin_token
    refused = run("--server", federation_server.url, "--token", token, "get", "clusters")
    assert refused.exit_code == 1
    assert "x509: certificate signed by unknown authority" in refused.output
    insecure = run(
        "--server", federation_server.url, "--token", token, "--insecure-skip-tls-verify", "get", "ns"
    )
    assert insecure.exit_code == 0, insecure.output


def test_insecure_http_only_on_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = start_server(tmp_path, api={"port": 0, "insecure_http": True})
    try:
        assert plain.process.tls is None and plain.url.startswith("http://")
        config = yaml.safe_load(plain.kubeconfig.read_text())
        assert "certificate-authority-data" not in config["clusters"][0]["cluster"]
        assert not (tmp_path / "data" / "pki").exists()
        point_cli_at(monkeypatch, plain.kubeconfig)
        assert run("get", "ns").exit_code == 0  # our CLI sends the token over HTTP; kubectl would not
    finally:
        plain.process.stop()


def test_an_operators_certificate_is_served_and_written_with_its_ca(tmp_path: Path) -> None:
    from federation.tlsfiles import ensure_serving_tls

    own = ensure_serving_tls(tmp_path / "own-pki", ["127.0.0.1"], name="operator")
    ca_file = tmp_path / "own-pki" / "ca.crt"
    api = {
        "port": 0,
        "tls_cert_file": own.cert_file,
        "tls_private_key_file": own.key_file,
        "tls_ca_file": str(ca_file),
    }
    served = start_server(tmp_path, api=api)
    try:
        config = yaml.safe_load(served.kubeconfig.read_text())
        written = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
        assert written == ca_file.read_bytes()
        assert not (tmp_path / "data" / "pki").exists()  # no CA of our own was made
        with served.client() as http:
            assert http.get("/readyz").status_code == 200
    finally:
        served.process.stop()


def test_a_certificate_that_does_not_load_stops_serve_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.crt"
    bad.write_text("not a certificate\n")
    command = ["serve", "--port", "0", "--data-dir", str(tmp_path / "data")]
    result = CliRunner().invoke(
        cli, [*command, "--tls-cert-file", str(bad), "--tls-private-key-file", str(bad)]
    )
    assert result.exit_code == 1
    assert result.output.startswith("Error: bad settings: api.tls_cert_file/tls_private_key_file")
    alone = CliRunner().invoke(cli, [*command, "--tls-cert-file", str(bad)])
    assert alone.exit_code == 1 and "give both or neither" in alone.output


def test_a_restart_keeps_the_token_and_an_older_versions_admin_token_is_carried_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    legacy = tmp_path / "client.yaml"
    monkeypatch.setenv("FEDERATION_CLIENT_CONFIG", str(legacy))
    first = start_server(tmp_path)
    token, path = first.admin_token, first.kubeconfig
    first.process.stop()
    again = start_server(tmp_path)  # the kubeconfig it wrote keeps the token (it is not stored in plaintext)
    again.process.stop()
    assert again.admin_token is None and yaml.safe_load(path.read_text())["users"][0]["user"] == {
        "token": token
    }
    path.unlink()  # as after an upgrade: the token only in the client config an older version wrote
    legacy.write_text(yaml.safe_dump({"server": "http://127.0.0.1:7080", "token": "fed_someone-elses"}))
    foreign = start_server(tmp_path)
    foreign.process.stop()
    assert yaml.safe_load(path.read_text())["users"][0]["user"] == {}  # not an admin token of this database
    legacy.write_text(yaml.safe_dump({"server": "http://127.0.0.1:7080", "token": token}))
    carried = start_server(tmp_path)
    carried.process.stop()
    assert yaml.safe_load(path.read_text())["users"][0]["user"] == {"token": token}
