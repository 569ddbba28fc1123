"""The CLI's HTTP client: finds the server and token, speaks the Kubernetes-shaped API (through the shared
`federation.apiclient`, whose `ApiError` it re-exports).

Where the server and token come from, first match wins: `--server`/`--token` flags, the environment
(`FEDERATION_SERVER`, `FEDERATION_TOKEN`), the client config file that `serve`/`up` write
(`~/.config/federation/client.yaml`, or `FEDERATION_CLIENT_CONFIG`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from federation.apiclient import ApiClient, ApiError
from federation.members.kubeconfig import write_private_file
from federation.model.kinds import KindInfo
from federation.settings import default_client_config_path


class ClientConfigError(Exception):
    """The CLI does not know which server to talk to."""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    server: str
    token: str | None


def write_client_config(path: Path, server: str, token: str) -> None:
    """Write the server URL and token, readable by the owner only (0600), atomically."""
    write_private_file(path, yaml.safe_dump({"server": server, "token": token}))


def read_client_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = " ".join(str(exc).split())
        raise ClientConfigError(f"the client config {path} cannot be read: {problem}") from exc
    return loaded if isinstance(loaded, dict) else {}


def resolve_client_config(server: str | None, token: str | None) -> ClientConfig:
    stored = read_client_config(default_client_config_path())
    server = server or os.environ.get("FEDERATION_SERVER") or stored.get("server")
    token = token or os.environ.get("FEDERATION_TOKEN") or stored.get("token")
    if not server:
        raise ClientConfigError(
            "no server configured: pass --server URL, set FEDERATION_SERVER, or start one with "
            "`federation up` / `federation serve` (they write the client config)"
        )
    return ClientConfig(server=server.rstrip("/"), token=token)


def object_path(info: KindInfo, namespace: str | None, name: str | None = None) -> str:
    path = info.path_prefix
    if info.namespaced and namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{info.plural}"
    return f"{path}/{name}" if name else path


class FederationClient(ApiClient):
    """The shared API client plus Kubernetes object paths; one instance per CLI invocation."""

    def __init__(self, config: ClientConfig, *, timeout: float = 30.0, transport: Any = None) -> None:
        super().__init__(config.server, config.token, timeout=timeout, transport=transport)

    def get(self, info: KindInfo, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self.request("GET", object_path(info, namespace, name))
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise
        return result

    def list(
        self, info: KindInfo, namespace: str | None, selector: str | None = None, page_size: int = 500
    ) -> Iterator[dict[str, Any]]:
        """Every object, following `continue` tokens page by page."""
        params = {"labelSelector": selector} if selector else None
        return self.pages(object_path(info, namespace), params, page_size)

    def create(self, info: KindInfo, obj: dict[str, Any]) -> dict[str, Any]:
        namespace = obj.get("metadata", {}).get("namespace")
        result: dict[str, Any] = self.request("POST", object_path(info, namespace), body=obj)
        return result

    def replace(self, info: KindInfo, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        result: dict[str, Any] = self.request(
            "PUT", object_path(info, meta.get("namespace"), meta["name"]), body=obj
        )
        return result

    def delete(self, info: KindInfo, namespace: str | None, name: str) -> None:
        self.request("DELETE", object_path(info, namespace, name))
