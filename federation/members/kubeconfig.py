"""Loading and validating kubeconfigs, and extracting what a client needs from the chosen context.

Invariants:
- ``load_kubeconfig`` never returns a half-usable result: the context exists, its cluster has a server URL,
  its user has a token (inline or ``tokenFile``) or a client certificate and key. Anything else raises
  ``KubeconfigError`` with a reason a user can act on.
- File references (``certificate-authority``, ``client-certificate``, ``client-key``, ``tokenFile``) are
  read at load time and inlined, so the result (``minimal``) is self-contained and can be stored.
- ``credentials_hash`` is stable for equal content, whatever the key order.
- A kubeconfig (or any credential file) this project writes is 0600 from its first byte, and replaced
  atomically: ``write_private_file``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from federation.members.errors import KubeconfigError


@dataclass(frozen=True, slots=True)
class Kubeconfig:
    """The chosen context of a kubeconfig, resolved and self-contained."""

    context: str
    server: str
    token: str | None
    client_cert: bytes | None
    client_key: bytes | None
    ca: bytes | None
    insecure: bool
    # A one-context kubeconfig with every file reference inlined (what the kubernetes client is built from).
    minimal: dict[str, Any]

    @property
    def tls(self) -> bool:
        return self.server.startswith("https://")


PRIVATE_FILE_MODE = 0o600


def write_private_file(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by the owner only (0600), atomically (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), PRIVATE_FILE_MODE)  # a leftover temp file keeps its mode otherwise
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_kubeconfig(path: str | Path, kubeconfig: dict[str, Any]) -> None:
    """A kubeconfig as YAML, mode 0600 (it holds a bearer token or a client key)."""
    write_private_file(path, yaml.safe_dump(kubeconfig, sort_keys=False))


def read_kubeconfig_file(path: str | Path, cluster: str = "") -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = " ".join(str(exc).split())  # PyYAML's messages span lines; a reason is one
        raise KubeconfigError(cluster or str(path), f"cannot read kubeconfig {path}: {problem}") from exc
    if not isinstance(data, dict):
        raise KubeconfigError(cluster or str(path), f"kubeconfig {path} is not a YAML mapping")
    data.setdefault("__dir__", str(Path(path).resolve().parent))
    return data


def _named(items: Any, name: str, what: str, cluster: str) -> dict[str, Any]:
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            return dict(item.get(what) or {})
    raise KubeconfigError(cluster, f"kubeconfig has no {what} named {name!r}")


def _read(path: str, base: str, cluster: str) -> bytes:
    full = path if os.path.isabs(path) else os.path.join(base, path)
    try:
        return Path(full).read_bytes()
    except OSError as exc:
        raise KubeconfigError(cluster, f"cannot read {full}: {exc.strerror}") from exc


def _data(section: dict[str, Any], key: str, base: str, cluster: str) -> bytes | None:
    """``<key>-data`` (base64) or the file named by ``<key>``, else None."""
    inline = section.get(f"{key}-data")
    if inline:
        try:
            return base64.b64decode(inline, validate=True)
        except ValueError as exc:
            raise KubeconfigError(cluster, f"{key}-data is not valid base64") from exc
    if section.get(key):
        return _read(str(section[key]), base, cluster)
    return None


def _choose_context(config: dict[str, Any], context: str | None, cluster: str) -> str:
    chosen = context or config.get("current-context")
    if not chosen:
        raise KubeconfigError(cluster, "kubeconfig has no current-context; pass --context")
    names = [c.get("name") for c in config.get("contexts") or [] if isinstance(c, dict)]
    if chosen not in names:
        known = ", ".join(str(n) for n in names) or "none"
        raise KubeconfigError(cluster, f"kubeconfig has no context {chosen!r} (contexts: {known})")
    return str(chosen)


def load_kubeconfig(
    source: dict[str, Any] | str | Path, context: str | None = None, cluster: str = ""
) -> Kubeconfig:
    """Resolve ``context`` (default: current-context) of a kubeconfig dict or file into a ``Kubeconfig``."""
    config = source if isinstance(source, dict) else read_kubeconfig_file(source, cluster)
    base = str(config.get("__dir__") or os.getcwd())
    name = _choose_context(config, context, cluster)
    ctx = _named(config.get("contexts"), name, "context", cluster)
    cluster_section = _named(config.get("clusters"), str(ctx.get("cluster", "")), "cluster", cluster)
    user = _named(config.get("users"), str(ctx.get("user", "")), "user", cluster) if ctx.get("user") else {}
    server = str(cluster_section.get("server") or "").rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise KubeconfigError(
            cluster, f"context {name!r} has no usable server URL (got {server or 'none'!r})"
        )
    token = user.get("token") or (
        _read(user["tokenFile"], base, cluster).decode().strip() if user.get("tokenFile") else None
    )
    cert, key = _data(user, "client-certificate", base, cluster), _data(user, "client-key", base, cluster)
    if not token and not (cert and key):
        raise KubeconfigError(
            cluster, f"context {name!r} has no credentials (need a token or a client certificate and key)"
        )
    ca = _data(cluster_section, "certificate-authority", base, cluster)
    insecure = bool(cluster_section.get("insecure-skip-tls-verify", False))
    minimal = _minimal(name, server, token, cert, key, ca, insecure, ctx.get("namespace"))
    return Kubeconfig(name, server, token, cert, key, ca, insecure, minimal)


def _minimal(
    name: str,
    server: str,
    token: str | None,
    cert: bytes | None,
    key: bytes | None,
    ca: bytes | None,
    insecure: bool,
    namespace: Any,
) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if ca:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    user: dict[str, Any] = {}
    if token:
        user["token"] = token
    if cert and key:
        user["client-certificate-data"] = base64.b64encode(cert).decode()
        user["client-key-data"] = base64.b64encode(key).decode()
    context: dict[str, Any] = {"cluster": name, "user": name}
    if namespace:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
    }


def credentials_hash(kubeconfig: dict[str, Any]) -> str:
    """A stable digest of a kubeconfig's content: equal configs hash equal, any change (token, CA) differs."""
    canonical = json.dumps(
        {k: v for k, v in kubeconfig.items() if k != "__dir__"}, sort_keys=True, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
