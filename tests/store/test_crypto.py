"""Secrets at rest: Fernet round trip and the key file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from federation.store import SecretBox, StoreError, generate_key, load_or_create_key
from federation.store.errors import DecryptionError


def test_round_trip() -> None:
    box = SecretBox(generate_key())
    token = box.encrypt(b"secret kubeconfig")
    assert token != b"secret kubeconfig"
    assert box.decrypt(token) == b"secret kubeconfig"


def test_wrong_key_is_an_error_not_garbage() -> None:
    token = SecretBox(generate_key()).encrypt(b"x")
    with pytest.raises(DecryptionError):
        SecretBox(generate_key()).decrypt(token)


def test_key_file_created_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "secret.key"
    key = load_or_create_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(path) == key  # second start reuses it
    box = SecretBox(key)
    assert SecretBox(load_or_create_key(path)).decrypt(box.encrypt(b"x")) == b"x"
    assert [p.name for p in path.parent.iterdir()] == ["secret.key"]  # no temporary left behind


def test_invalid_key_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    path.write_text("not a key")
    with pytest.raises(StoreError, match=r"secret\.key"):
        load_or_create_key(path)
