"""Secrets at rest: member credentials are Fernet-encrypted (AES-128-CBC + HMAC-SHA256).

Invariants:
- The key is never stored in the database. It comes from settings or from a key file that is created
  on first start with mode 0600 (created exclusively, so two processes starting together agree on one key).
- Decrypting with the wrong key raises ``DecryptionError``, never returns garbage.
- ``fingerprint`` identifies a key without revealing it: an HMAC of a fixed label under the key (not a plain
  hash of the key), so storing it (see ``keycheck``) gives nothing to decrypt with or to guess against.
"""

from __future__ import annotations

import hmac
import os
from hashlib import sha256
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from federation.store.errors import DecryptionError, StoreError

KEY_FILE_MODE = 0o600
_FINGERPRINT_LABEL = b"federation/key-fingerprint/v1"


def generate_key() -> bytes:
    return Fernet.generate_key()


class SecretBox:
    """Encrypts and decrypts bytes with one Fernet key (url-safe base64, 32 bytes decoded)."""

    def __init__(self, key: bytes | str) -> None:
        raw = key.encode() if isinstance(key, str) else key
        self._fernet = Fernet(raw.strip())
        self._fingerprint = hmac.new(raw.strip(), _FINGERPRINT_LABEL, sha256).hexdigest()

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def encrypt(self, plaintext: bytes) -> bytes:
        return self._fernet.encrypt(plaintext)

    def decrypt(self, token: bytes) -> bytes:
        try:
            return self._fernet.decrypt(token)
        except InvalidToken as exc:
            raise DecryptionError("stored secret cannot be decrypted with the configured key") from exc


def load_or_create_key(path: Path | str) -> bytes:
    """The key in ``path``; on first use, a new key written there with mode 0600."""
    path = Path(path).expanduser()
    if not path.exists():
        _create_key_file(path)
    key = path.read_bytes().strip()
    try:
        Fernet(key)  # fail now, naming the file, rather than at the first decrypt
    except ValueError as exc:
        raise StoreError(f"{path}: not a Fernet key ({exc})") from exc
    return key


def _create_key_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(generate_key() + b"\n")
        os.chmod(temporary, KEY_FILE_MODE)  # exact, whatever the umask
        # link() publishes a complete file atomically and fails if another process published first,
        # in which case its key wins and ours is discarded.
        os.link(temporary, path)
    except FileExistsError:
        return  # another process published its key first: that one is the key
    finally:
        temporary.unlink(missing_ok=True)
