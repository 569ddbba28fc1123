"""The CLI's HTTP client: speaks the Kubernetes-shaped API through the shared `federation.apiclient`
(whose `ApiError` it re-exports). Which server, token and CA it uses: `cli.clientconfig` (kubeconfigs,
`--server`/`--token`, `FEDERATION_SERVER`/`FEDERATION_TOKEN`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from federation.apiclient import ApiClient, ApiError
from federation.cli.clientconfig import ClientConfig, ClientConfigError
from federation.model.kinds import KindInfo

__all__ = ["ApiError", "ClientConfig", "ClientConfigError", "FederationClient"]


def object_path(info: KindInfo, namespace: str | None, name: str | None = None) -> str:
    path = info.path_prefix
    if info.namespaced and namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{info.plural}"
    return f"{path}/{name}" if name else path


class FederationClient(ApiClient):
    """The shared API client plus Kubernetes object paths; one instance per CLI invocation."""

    def __init__(self, config: ClientConfig, *, timeout: float = 30.0, transport: Any = None) -> None:
        super().__init__(
            config.server,
            config.token,
            timeout=timeout,
            transport=transport,
            ca_pem=config.ca_pem,
            insecure=config.insecure,
        )

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
