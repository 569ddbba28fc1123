"""Which server, token and CA a client command uses (`cli.clientconfig`): kubectl's merge and precedence,
file references relative to their kubeconfig, flags over the kubeconfig, and one clear error otherwise."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from federation.cli.clientconfig import ClientConfigError, ClientFlags, resolve
from federation.tlsfiles import new_ca

CA_PEM = new_ca("test-ca").cert.public_bytes(serialization.Encoding.PEM)


def kubeconfig(
    name: str, server: str, token: str | None = None, *, current: str | None = None, **cluster: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **cluster}}],
        "users": [{"name": name, "user": {"token": token} if token else {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": current if current is not None else name,
    }


def write(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("KUBECONFIG", "FEDERATION_SERVER", "FEDERATION_TOKEN", "FEDERATION_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # the default data directory, empty


def test_kubeconfig_list_merges_first_definition_and_first_current_context_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(tmp_path / "one", kubeconfig("shared", "https://one:1", "t1", current=""))
    second = write(tmp_path / "two", kubeconfig("shared", "https://two:2", "t2"))
    third = kubeconfig("extra", "https://three:3", "t3")
    third_path = write(tmp_path / "three", third)
    listed = [str(tmp_path / "missing"), str(first), str(second), str(third_path)]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(listed))
    # The current-context comes from the first file that sets one (two: "shared"); the definition of
    # "shared" from the first file that has it (one).
    chosen = resolve(ClientFlags())
    assert (chosen.server, chosen.token) == ("https://one:1", "t1")
    extra = resolve(ClientFlags(context="extra"))
    assert (extra.server, extra.token) == ("https://three:3", "t3")


def test_flags_and_environment_override_the_kubeconfig_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = base64.b64encode(CA_PEM).decode()
    path = write(
        tmp_path / "fed",
        kubeconfig("f", "https://fed:7080", "kube-token", **{"certificate-authority-data": data}),
    )
    monkeypatch.setenv("KUBECONFIG", str(path))
    plain = resolve(ClientFlags())
    assert (plain.server, plain.token, plain.ca_pem, plain.insecure) == (
        "https://fed:7080",
        "kube-token",
        CA_PEM,
        False,
    )
    monkeypatch.setenv("FEDERATION_TOKEN", "env-token")
    overridden = resolve(ClientFlags(server="https://elsewhere:1/"))
    assert (overridden.server, overridden.token, overridden.ca_pem) == (
        "https://elsewhere:1",
        "env-token",
        CA_PEM,
    )
    assert resolve(ClientFlags(token="flag-token")).token == "flag-token"
    assert resolve(ClientFlags(insecure_skip_tls_verify=True)).insecure


def test_files_a_kubeconfig_names_are_relative_to_it(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "ca.crt").write_bytes(CA_PEM)
    (folder / "token").write_text("file-token\n")
    config = kubeconfig("f", "https://fed:7080", **{"certificate-authority": "ca.crt"})
    config["users"][0]["user"] = {"tokenFile": "token"}
    path = write(folder / "fed.kubeconfig", config)
    chosen = resolve(ClientFlags(kubeconfig=str(path)))
    assert (chosen.token, chosen.ca_pem) == ("file-token", CA_PEM)
    ca_flag = tmp_path / "other-ca.crt"
    ca_flag.write_bytes(CA_PEM)
    assert resolve(ClientFlags(kubeconfig=str(path), certificate_authority=str(ca_flag))).ca_pem == CA_PEM


def test_the_default_is_the_kubeconfig_under_the_data_directory_never_kubes_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path / "home" / ".kube" / "config", kubeconfig("own", "https://my-real-cluster:6443", "t"))
    with pytest.raises(ClientConfigError, match="no server configured"):
        resolve(ClientFlags())
    write(
        tmp_path / "xdg" / "federation" / "federation.kubeconfig",
        kubeconfig("federation", "https://d:1", "t"),
    )
    assert resolve(ClientFlags()).server == "https://d:1"
    monkeypatch.setenv("FEDERATION_DATA_DIR", str(tmp_path / "elsewhere"))
    write(tmp_path / "elsewhere" / "federation.kubeconfig", kubeconfig("federation", "https://e:1", "t"))
    assert resolve(ClientFlags()).server == "https://e:1"


@pytest.mark.parametrize(
    ("setup", "flags", "message"),
    [
        ("none", ClientFlags(kubeconfig="{dir}/absent"), "the kubeconfig {dir}/absent does not exist"),
        ("good", ClientFlags(context="nope"), 'context "nope" does not exist in {dir}/fed (contexts: f)'),
        ("bad-yaml", ClientFlags(), "the kubeconfig {dir}/fed cannot be read: "),
        ("bad-ca", ClientFlags(), "the certificate authority does not load"),
        ("no-current", ClientFlags(), "no server configured"),
        ("none", ClientFlags(context="c"), 'context "c" given, but no kubeconfig was found'),
    ],
)
def test_unusable_settings_are_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str, flags: ClientFlags, message: str
) -> None:
    path = tmp_path / "fed"
    if setup == "good":
        write(path, kubeconfig("f", "https://fed:1", "t"))
    elif setup == "bad-yaml":
        path.write_text("clusters: [\n")
    elif setup == "bad-ca":
        write(
            path,
            kubeconfig(
                "f", "https://fed:1", "t", **{"certificate-authority-data": base64.b64encode(b"x").decode()}
            ),
        )
    elif setup == "no-current":
        write(path, kubeconfig("f", "https://fed:1", "t", current=""))
    monkeypatch.setenv("KUBECONFIG", str(path))
    if flags.kubeconfig:
        flags = ClientFlags(kubeconfig=flags.kubeconfig.format(dir=tmp_path))
    with pytest.raises(ClientConfigError) as caught:
        resolve(flags)
    assert str(caught.value).startswith(message.format(dir=tmp_path))
