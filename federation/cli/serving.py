"""How `serve`/`up` are reached: HTTPS material, the URL clients use, and the kubeconfig written for them.

Invariants:
- HTTPS unless ``api.insecure_http``: an operator's certificate (``api.tls_cert_file`` and
  ``tls_private_key_file``, checked to load before anything starts; a bad one is one ``ValueError`` naming
  the setting), else the CA and serving certificate kept under ``<data_dir>/pki`` (``federation.tlsfiles``),
  covering localhost, the host's name, the bound address and the advertised one.
- The kubeconfig (``<data_dir>/federation.kubeconfig``, 0600, context ``federation``) is the server's own
  file: every start rewrites it with the current URL and CA, so a server started on another port or data
  directory never repoints anyone else's config. Its token is the admin token made at first start, else the
  one it already held, else an admin token an older version left in ``~/.config/federation/client.yaml``
  (only if this database accepts it as admin), else none (the user passes ``--token``).
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from federation.members.kubeconfig import write_kubeconfig
from federation.settings import ApiSettings, Settings, legacy_client_config_path
from federation.store.db import UnitOfWork
from federation.store.tokens import TokenRepository
from federation.tlsfiles import WILDCARD_HOSTS, TlsFiles, ensure_serving_tls

CONTEXT = "federation"
ADMIN_USER = "federation-admin"


def serving_tls(settings: Settings, bound_host: str) -> TlsFiles | None:
    """The certificate to serve with, or None for plain HTTP (module invariants)."""
    api = settings.api
    if api.insecure_http:
        return None
    if api.tls_cert_file is not None and api.tls_private_key_file is not None:
        return _operator_tls(api, api.tls_cert_file, api.tls_private_key_file)
    return ensure_serving_tls(settings.data_dir / "pki", serving_hosts(api, bound_host))


def serving_hosts(api: ApiSettings, bound_host: str) -> list[str]:
    """The names a client may reach this server by, besides the local ones the certificate always has."""
    hosts = [socket.gethostname(), bound_host]
    if api.advertise_url:
        advertised = urlsplit(api.advertise_url).hostname
        if advertised:
            hosts.append(advertised)
    return [h for h in hosts if h and h not in WILDCARD_HOSTS]


def _operator_tls(api: ApiSettings, cert_file: Path, key_file: Path) -> TlsFiles:
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"api.tls_cert_file/tls_private_key_file ({cert_file}, {key_file}): {exc}") from exc
    ca_pem = None
    if api.tls_ca_file is not None:
        try:
            ca_pem = api.tls_ca_file.read_bytes()
            ssl.create_default_context(cadata=ca_pem.decode())
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ValueError(f"api.tls_ca_file ({api.tls_ca_file}): {exc}") from exc
    return TlsFiles(str(cert_file), str(key_file), ca_pem)


def client_url(api: ApiSettings, bound_host: str, port: int, tls: TlsFiles | None) -> str:
    """The URL clients use: the advertised one, else the bound address (a wildcard one means this machine,
    named as the certificate names it)."""
    if api.advertise_url:
        return api.advertise_url.rstrip("/")
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(bound_host, bound_host)
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def federation_kubeconfig(url: str, ca_data: str | None, token: str | None) -> dict[str, Any]:
    """One cluster, user and context (``federation``), as kubectl and the Python client read it."""
    cluster: dict[str, Any] = {"server": url}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": ADMIN_USER, "user": {"token": token} if token else {}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": ADMIN_USER}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_federation_kubeconfig(path: Path, url: str, tls: TlsFiles | None, token: str | None) -> None:
    write_kubeconfig(path, federation_kubeconfig(url, tls.ca_data if tls else None, token))


def kept_admin_token(uow: UnitOfWork, kubeconfig_path: Path) -> str | None:
    """The token to keep writing on a later start (module invariants), or None."""
    token = _token_in(kubeconfig_path)
    if token:
        return token
    legacy = _yaml_mapping(legacy_client_config_path()).get("token")
    if not isinstance(legacy, str) or not legacy:
        return None
    with uow() as session:
        known = TokenRepository(session).authenticate(legacy)
    return legacy if known is not None and known.role == "admin" else None


def _token_in(kubeconfig_path: Path) -> str | None:
    config = _yaml_mapping(kubeconfig_path)
    for entry in config.get("users") or []:
        user = entry.get("user") if isinstance(entry, dict) else None
        if isinstance(user, dict) and isinstance(user.get("token"), str) and user["token"]:
            return str(user["token"])
    return None


def _yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML file's mapping; {} when it is missing or unreadable (a lost token is recoverable with
    `federation token create`, a crash at start is not helpful)."""
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}
