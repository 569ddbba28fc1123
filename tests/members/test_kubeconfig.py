"""Kubeconfig loading: context choice, validation errors, inlined file references, stable hashing."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.members.errors import KubeconfigError
from federation.members.kubeconfig import credentials_hash, load_kubeconfig


def _config(**user: Any) -> dict[str, Any]:
    return {
        "clusters": [
            {"name": "c", "cluster": {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
        "contexts": [
            {"name": "one", "context": {"cluster": "c", "user": "u"}},
            {"name": "two", "context": {"cluster": "c", "user": "u", "namespace": "ns"}},
        ],
        "current-context": "one",
    }


def test_current_context_and_explicit_context() -> None:
    loaded = load_kubeconfig(_config())
    assert (loaded.context, loaded.server, loaded.token, loaded.insecure) == (
        "one",
        "https://10.0.0.1:6443",
        "t",
        True,
    )
    assert load_kubeconfig(_config(), context="two").context == "two"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.update({"current-context": ""}), "no current-context"),
        (lambda c: c.update({"current-context": "nope"}), "no context 'nope'"),
        (lambda c: c["clusters"][0]["cluster"].pop("server"), "no usable server URL"),
        (lambda c: c["users"][0].update({"user": {}}), "no credentials"),
        (lambda c: c["contexts"][0]["context"].update({"cluster": "x"}), "no cluster named 'x'"),
    ],
)
def test_validation_errors(mutate: Any, message: str) -> None:
    config = _config()
    mutate(config)
    with pytest.raises(KubeconfigError) as exc:
        load_kubeconfig(config, cluster="m1")
    assert message in str(exc.value) and exc.value.cluster == "m1"


def test_file_references_are_inlined(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"CA")
    (tmp_path / "token").write_text("from-file\n")
    config = _config(tokenFile="token")
    config["clusters"][0]["cluster"] = {"server": "https://h:1", "certificate-authority": "ca.crt"}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    loaded = load_kubeconfig(path)
    assert loaded.token == "from-file" and loaded.ca == b"CA" and not loaded.insecure
    cluster = loaded.minimal["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"CA"


def test_unreadable_file_is_a_kubeconfig_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError):
        load_kubeconfig(tmp_path / "missing")


def test_client_certificates_count_as_credentials() -> None:
    cert = base64.b64encode(b"CERT").decode()
    key = base64.b64encode(b"KEY").decode()
    loaded = load_kubeconfig(_config(**{"client-certificate-data": cert, "client-key-data": key}))
    assert loaded.client_cert == b"CERT" and loaded.client_key == b"KEY" and loaded.token is None


def test_credentials_hash_ignores_key_order_and_sees_changes() -> None:
    assert credentials_hash({"a": 1, "b": {"c": 2}}) == credentials_hash({"b": {"c": 2}, "a": 1})
    assert credentials_hash(_config(token="x")) != credentials_hash(_config(token="y"))
