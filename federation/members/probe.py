"""Health probes over httpx: GET ``/readyz``, falling back to ``/healthz`` when the server answers 404.

Invariants (Karmada ``getClusterHealthStatus``):
- A transport failure (refused, reset, TLS, timeout) is ``online=False``: the cluster is not reachable.
- Any HTTP answer is ``online=True``; ``healthy`` only when it is 200.
- Probes never raise for member trouble; they return a ``ProbeResult`` with the error text. Every request
  has a timeout. The transport can be swapped (httpx ``BaseTransport``) so tests need no network.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import time
from dataclasses import dataclass

import httpx

from federation.listening import CLIENT_IDLE_SECONDS
from federation.members.kubeconfig import Kubeconfig

# httpx logs every request at INFO: a line per member per status interval in an idle server's log. A failed
# probe says why in the cluster's Ready condition (and its event), which is where an operator looks.
logging.getLogger("httpx").setLevel(logging.WARNING)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe: reachability, health, the HTTP code, the error text, and how long it took."""

    online: bool
    healthy: bool
    status_code: int | None
    error: str | None
    latency_s: float
    endpoint: str

    @property
    def ok(self) -> bool:
        return self.online and self.healthy


def ssl_context(config: Kubeconfig) -> ssl.SSLContext | bool:
    """Verification as the kubeconfig says: its CA (or system roots), a client cert, or none when insecure."""
    if not config.tls:
        return False
    if config.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cadata=config.ca.decode() if config.ca else None)
        if config.ca is None:
            context.load_default_certs()
    if config.client_cert and config.client_key:
        _load_client_cert(context, config.client_cert, config.client_key)
    return context


def _load_client_cert(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl can only read certificates from files; keep them just long enough to load.
    with tempfile.TemporaryDirectory() as folder:
        cert_path, key_path = os.path.join(folder, "c.crt"), os.path.join(folder, "c.key")
        with open(cert_path, "wb") as out:
            out.write(cert)
        with open(os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
            out.write(key)
        context.load_cert_chain(cert_path, key_path)


def make_http_client(
    config: Kubeconfig, timeout: float, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    verify = ssl_context(config) if transport is None else True
    return httpx.Client(
        base_url=config.server,
        headers=headers,
        timeout=timeout,
        verify=verify,
        transport=transport,
        limits=httpx.Limits(keepalive_expiry=CLIENT_IDLE_SECONDS),  # one connection from probe to probe
    )


def probe(client: httpx.Client) -> ProbeResult:
    """Probe ``/readyz``, then ``/healthz`` if ``/readyz`` is 404."""
    started = time.monotonic()
    result = _get(client, "/readyz", started)
    if result.status_code == 404:
        result = _get(client, "/healthz", started)
    return result


def _get(client: httpx.Client, path: str, started: float) -> ProbeResult:
    try:
        response = client.get(path)
    except httpx.HTTPError as exc:
        return ProbeResult(False, False, None, _describe(exc), time.monotonic() - started, path)
    healthy = response.status_code == 200
    error = None if healthy else f"{path} answered {response.status_code}: {response.text[:200]}"
    return ProbeResult(True, healthy, response.status_code, error, time.monotonic() - started, path)


def _describe(exc: httpx.HTTPError) -> str:
    """The cause in the words an operator knows from kubectl (Go's), with Python's detail after it."""
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout: no answer within the probe deadline ({type(exc).__name__})"
    text = str(exc)
    for marker, words in _CAUSES:
        if marker in text:
            return f"{words} ({text})"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# Python's ssl/socket wording → Go's (what `kubectl` prints for the same fault).
_CAUSES = (
    ("certificate has expired", "x509: certificate has expired or is not yet valid"),
    ("Hostname mismatch", "x509: certificate is valid for other names"),
    ("CERTIFICATE_VERIFY_FAILED", "x509: certificate signed by unknown authority"),
    ("Connection refused", "connection refused"),
    ("Name or service not known", "no such host"),
    ("No route to host", "no route to host"),
)
