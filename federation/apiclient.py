"""The one HTTP client of the federation API, shared by the CLI and the pull-mode agent: bearer auth,
a timeout on every call, Kubernetes `Status` bodies turned into `ApiError`, and `continue`-token paging.
Outside the layers: it depends on httpx and ``listening`` (how long an idle connection is kept) only.

TLS as client-go does it: a CA given (the kubeconfig's ``certificate-authority-data``) is the only root
trusted; without one the system roots verify; ``insecure`` (``insecure-skip-tls-verify``) verifies nothing.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import httpx

from federation.listening import CLIENT_IDLE_SECONDS


class ApiError(Exception):
    """A failed call; `code` 0 means the server was not reached. Carries the Status body's fields."""

    def __init__(self, code: int, reason: str, message: str, causes: tuple[dict[str, Any], ...] = ()) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.causes = code, reason, message, causes

    def __str__(self) -> str:
        return f"Error from server ({self.reason}): {self.message}"


class ApiClient:
    def __init__(
        self,
        server: str,
        token: str | None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        ca_pem: bytes | None = None,
        insecure: bool = False,
    ) -> None:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=server.rstrip("/"),
            headers=headers,
            timeout=timeout,
            transport=transport,
            verify=tls_verify(ca_pem, insecure),
            # An agent's lease renewals, 10 s apart, reuse one connection.
            limits=httpx.Limits(keepalive_expiry=CLIENT_IDLE_SECONDS),
        )

    def close(self) -> None:
        self._http.close()

    def request(
        self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        try:
            response = self._http.request(method, path, json=body, params=params)
        except httpx.HTTPError as exc:
            raise ApiError(
                0, "ServiceUnavailable", f"cannot reach {self._http.base_url}: {_cause(exc)}"
            ) from exc
        if response.is_success:
            return response.json() if response.content else None
        raise error_from(response)

    def pages(
        self, path: str, params: dict[str, Any] | None = None, page_size: int = 500
    ) -> Iterator[dict[str, Any]]:
        """Every item of a list, following `continue` tokens page by page."""
        query: dict[str, Any] = {**(params or {}), "limit": page_size}
        while True:
            page = self.request("GET", path, params=query) or {}
            yield from page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            query["continue"] = token


def _cause(exc: httpx.HTTPError) -> str:
    """Python's words, after Go's for an unknown CA (what kubectl says) and where the right CA is."""
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return (
            f"x509: certificate signed by unknown authority ({text}); use the kubeconfig the server wrote "
            "(it carries the CA) or pass --certificate-authority"
        )
    return text


def tls_verify(ca_pem: bytes | None, insecure: bool = False) -> ssl.SSLContext | bool:
    """httpx's ``verify`` for the rules in the module doc (a CA that does not load is a ValueError)."""
    if insecure:
        return False
    if ca_pem is None:
        return True
    try:
        return ssl.create_default_context(cadata=ca_pem.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError) as exc:
        raise ValueError(f"the certificate authority does not load: {exc}") from exc


def error_from(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    details = body.get("details") or {}
    return ApiError(
        code=response.status_code,
        reason=str(body.get("reason") or response.reason_phrase or "Unknown"),
        message=body.get("message") or response.text.strip() or response.reason_phrase,
        causes=tuple(details.get("causes") or ()),
    )
