"""TLS towards an HTTPS extender, built as kube-scheduler's ``makeTransport`` builds it (client-go's
``TLSConfigFor``).

Rules (kube-scheduler's):
- ``tlsConfig`` applies whenever it is given; ``enableHTTPS`` only adds one thing: without a CA
  (``caFile``/``caData``) the server is not verified (``insecure``). The URL's scheme decides http or https.
- A CA replaces the system roots (only that CA is trusted); without one the system roots verify.
- ``serverName`` is the name sent in SNI and checked against the server's certificate instead of the URL's
  host (the adapter passes it as httpcore's ``sni_hostname``).
- A client certificate (``certFile``/``certData`` with ``keyFile``/``keyData``) is presented when given.

Invariants: a file that cannot be read, or a CA, certificate or key that does not load, raises ValueError
naming the field, when the extender is built (at start), never at its first call. The ssl module loads a
certificate chain from files only, so PEM given inline is written to a private temporary directory (0700,
files 0600) for the time ``load_cert_chain`` reads it, then removed.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

from federation.settings_extenders import ExtenderSettings, ExtenderTLSSettings


def needs_tls(settings: ExtenderSettings) -> bool:
    """Whether a TLS context is built: an https URL, or TLS settings to check at start."""
    https = settings.urlPrefix.lower().startswith("https://")
    return https or settings.enableHTTPS or settings.tlsConfig is not None


def ssl_context(settings: ExtenderSettings) -> ssl.SSLContext:
    """The client TLS context for one extender (the rules above)."""
    tls = settings.tlsConfig or ExtenderTLSSettings()
    has_ca = bool(tls.caFile or tls.caData)
    context = _trusting(tls) if has_ca else ssl.create_default_context()
    if tls.insecure or (settings.enableHTTPS and not has_ca):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if tls.certFile or tls.certData:
        _present_certificate(context, tls)
    return context


def _trusting(tls: ExtenderTLSSettings) -> ssl.SSLContext:
    field = "tlsConfig.caFile" if tls.caFile else "tlsConfig.caData"
    try:
        return ssl.create_default_context(cafile=tls.caFile or None, cadata=tls.caData or None)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ValueError(f"{field}: cannot load the CA: {exc}") from exc


def _pem(data: str, path: str, field: str) -> str:
    if data:
        return data
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{field}: cannot read {path}: {exc}") from exc


def _present_certificate(context: ssl.SSLContext, tls: ExtenderTLSSettings) -> None:
    cert = _pem(tls.certData, tls.certFile, "tlsConfig.certFile")
    key = _pem(tls.keyData, tls.keyFile, "tlsConfig.keyFile")
    with tempfile.TemporaryDirectory(prefix="federation-extender-") as private:
        cert_path, key_path = Path(private, "tls.crt"), Path(private, "tls.key")
        for path, text in ((cert_path, cert), (key_path, key)):
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
                out.write(text)
        try:
            context.load_cert_chain(cert_path, key_path)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"tlsConfig: the client certificate and key do not load: {exc}") from exc
