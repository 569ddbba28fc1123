"""Which federation API server a client command talks to, and how: kubectl's rules over kubeconfigs.

The kubeconfig files, first match wins: ``--kubeconfig FILE`` (must exist); ``KUBECONFIG`` (a
colon-separated list, missing files skipped, merged as kubectl merges them: for each named cluster, user and
context the first file that defines the name wins, and the first ``current-context`` set wins); the
kubeconfig `serve`/`up` write under the default data directory (``FEDERATION_DATA_DIR`` when set). Not
``~/.kube/config``: that names the user's own clusters, not the federation.

From the context (``--context``, else ``current-context``) come the server URL, the CA
(``certificate-authority-data`` or the ``certificate-authority`` file), ``insecure-skip-tls-verify`` and the
token (``token`` or ``tokenFile``). Flags and the environment override them one by one, as kubectl's do:
``--server``/``FEDERATION_SERVER``, ``--token``/``FEDERATION_TOKEN``, ``--certificate-authority``,
``--insecure-skip-tls-verify``. A file named relative to a kubeconfig is relative to that file.

Invariant: anything unusable (a missing ``--kubeconfig``, unreadable YAML, an unknown context, no server at
all) is one ``ClientConfigError`` saying what to do, never a default server guessed silently.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from federation.apiclient import tls_verify
from federation.paths import default_kubeconfig_path

NAMED_SECTIONS = ("clusters", "users", "contexts")
# kubeconfig keys that name files, per section entry (resolved against the file that holds them).
_FILE_KEYS = {"cluster": ("certificate-authority",), "user": ("tokenFile",)}


class ClientConfigError(Exception):
    """The CLI does not know which server to talk to, or how."""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    server: str
    token: str | None
    ca_pem: bytes | None = None  # None: the system roots verify an https server
    insecure: bool = False  # insecure-skip-tls-verify


@dataclass(frozen=True, slots=True)
class ClientFlags:
    """What the command line (and the environment) say; None: not given."""

    server: str | None = None
    token: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    certificate_authority: str | None = None
    insecure_skip_tls_verify: bool = False


def kubeconfig_files(explicit: str | None) -> list[Path]:
    """The files to merge, in precedence order (module doc); only existing ones."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ClientConfigError(f"the kubeconfig {explicit} does not exist")
        return [path]
    listed = os.environ.get("KUBECONFIG")
    candidates = [Path(p).expanduser() for p in listed.split(os.pathsep) if p] if listed else []
    candidates = candidates or [default_kubeconfig_path()]
    return [path for path in candidates if path.is_file()]


def read_kubeconfig(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = " ".join(str(exc).split())
        raise ClientConfigError(f"the kubeconfig {path} cannot be read: {problem}") from exc
    if not isinstance(loaded, dict):
        raise ClientConfigError(f"the kubeconfig {path} is not a YAML mapping")
    return loaded


def merge_kubeconfigs(paths: list[Path]) -> dict[str, Any]:
    """kubectl's merge: the first definition of each name wins; the first current-context set wins."""
    merged: dict[str, Any] = {section: {} for section in NAMED_SECTIONS}
    merged["current-context"] = None
    for path in paths:
        config = read_kubeconfig(path)
        for section in NAMED_SECTIONS:
            for entry in config.get(section) or []:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    body = _absolute_files(entry, section[:-1], path.resolve().parent)
                    merged[section].setdefault(entry["name"], body)
        if not merged["current-context"] and config.get("current-context"):
            merged["current-context"] = str(config["current-context"])
    return merged


def _absolute_files(entry: dict[str, Any], inner: str, base: Path) -> dict[str, Any]:
    body = entry.get(inner)
    if not isinstance(body, dict):
        return {}
    body = dict(body)
    for key in _FILE_KEYS.get(inner, ()):
        if isinstance(body.get(key), str) and body[key]:
            body[key] = str(base / Path(body[key]).expanduser())
    return body


def _chosen(merged: dict[str, Any], context: str | None, paths: list[Path]) -> dict[str, Any]:
    """The cluster and user fields of the chosen context ({} when there is no context at all)."""
    name = context or merged["current-context"]
    if not name:
        return {}
    found = merged["contexts"].get(name)
    if found is None:
        where = ", ".join(str(p) for p in paths) or "no kubeconfig"
        known = ", ".join(sorted(merged["contexts"])) or "none"
        raise ClientConfigError(f'context "{name}" does not exist in {where} (contexts: {known})')
    cluster = merged["clusters"].get(str(found.get("cluster") or ""), {})
    user = merged["users"].get(str(found.get("user") or ""), {})
    return {"cluster": cluster, "user": user}


def _read_bytes(path: str, what: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ClientConfigError(f"cannot read the {what} {path}: {exc.strerror}") from exc


def _ca(cluster: dict[str, Any]) -> bytes | None:
    inline = cluster.get("certificate-authority-data")
    if inline:
        try:
            return base64.b64decode(str(inline), validate=True)
        except (ValueError, binascii.Error) as exc:
            raise ClientConfigError("certificate-authority-data is not valid base64") from exc
    path = cluster.get("certificate-authority")
    return _read_bytes(str(path), "certificate authority") if path else None


def _token(user: dict[str, Any]) -> str | None:
    if user.get("token"):
        return str(user["token"])
    if user.get("tokenFile"):
        return _read_bytes(str(user["tokenFile"]), "token file").decode().strip() or None
    return None


def resolve(flags: ClientFlags) -> ClientConfig:
    """The server, token and TLS trust a client command uses (module doc)."""
    paths = kubeconfig_files(flags.kubeconfig)
    if flags.context and not paths:
        raise ClientConfigError(f'context "{flags.context}" given, but no kubeconfig was found')
    chosen = _chosen(merge_kubeconfigs(paths), flags.context, paths) if paths else {}
    cluster, user = chosen.get("cluster", {}), chosen.get("user", {})
    server = flags.server or os.environ.get("FEDERATION_SERVER") or cluster.get("server")
    if not server:
        raise ClientConfigError(
            "no server configured: pass --kubeconfig FILE or --server URL, set KUBECONFIG, or start one with "
            f"`federation up` / `federation serve` (they write {default_kubeconfig_path()})"
        )
    token = flags.token or os.environ.get("FEDERATION_TOKEN") or _token(user)
    ca = (
        _read_bytes(flags.certificate_authority, "certificate authority")
        if flags.certificate_authority
        else None
    )
    insecure = flags.insecure_skip_tls_verify or bool(cluster.get("insecure-skip-tls-verify"))
    config = ClientConfig(str(server).rstrip("/"), token, ca or _ca(cluster), insecure)
    try:
        tls_verify(config.ca_pem, config.insecure)  # a CA that does not load is said here, once
    except ValueError as exc:
        raise ClientConfigError(str(exc)) from exc
    return config
