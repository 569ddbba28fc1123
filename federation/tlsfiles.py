"""TLS material for our HTTPS servers (the API server and the member simulator): a private CA and a serving
certificate it signs, as the files uvicorn reads plus the CA in kubeconfig form. Outside the layers: it
depends on ``cryptography`` only.

Why: kubectl (client-go) sends bearer tokens only over TLS, so every server that checks a token serves
HTTPS; the kubeconfig carries the CA as ``certificate-authority-data`` and clients verify the server
normally (no ``insecure-skip-tls-verify``).

Invariants:
- A serving certificate names ``localhost``, ``127.0.0.1``, ``::1`` and every host it is issued for, with
  the serverAuth usage; the CA is a CA (basicConstraints, keyCertSign); both carry key identifiers (Python
  3.13's strict verification and Go's verifier accept them).
- ``make_tls``: a fresh CA per call, written to a private temporary directory (a simulator's, thrown away).
- ``ensure_serving_tls``: the CA under a directory is kept for good once made (kubeconfigs carry it); the
  serving certificate is issued again, by the same CA, whenever it is missing, no longer covers the hosts
  asked for, expires within 30 days or was not signed by that CA. Private keys are 0600, the directory 0700.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
SERVING_DAYS = 365
RENEW_BEFORE = datetime.timedelta(days=30)
ALWAYS_NAMED = ("localhost", "127.0.0.1", "::1")
# What a wildcard bind address means for a client: the same machine (the certificate covers it).
WILDCARD_HOSTS = ("", "0.0.0.0", "::")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """The paths uvicorn reads, plus the CA that verifies them (None: a certificate the system roots
    verify, e.g. one an operator brought)."""

    cert_file: str
    key_file: str
    ca_pem: bytes | None

    @property
    def ca_data(self) -> str | None:
        return base64.b64encode(self.ca_pem).decode() if self.ca_pem else None


@dataclass(frozen=True, slots=True)
class _Issued:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return x509.DNSName(host)


def alt_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    """The subject alternative names for ``hosts`` plus the local names, each once, in a stable order."""
    names: list[x509.GeneralName] = []
    for host in (*ALWAYS_NAMED, *hosts):
        if host in WILDCARD_HOSTS:
            continue
        name = _general_name(host)
        if name not in names:
            names.append(name)
    return names


def _builder(
    subject: str, issuer: _Issued | None, key: ec.EllipticCurvePrivateKey, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    public = key.public_key()
    issuer_name = issuer.cert.subject if issuer else _name(subject)
    issuer_key = issuer.key.public_key() if issuer else public
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # a client whose clock is a little behind
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key), critical=False)
    )


def _usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def new_ca(common_name: str, days: int = CA_DAYS) -> _Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(common_name, None, key, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_usage(ca=True), critical=True)
        .sign(key, hashes.SHA256())
    )
    return _Issued(cert, key)


def issue_serving(ca: _Issued, common_name: str, hosts: Iterable[str], days: int = SERVING_DAYS) -> _Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(common_name, ca, key, days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alt_names(hosts)), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return _Issued(cert, key)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write atomically, ``mode`` from the first byte: a key is never readable by others, even briefly."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), mode)
        handle.write(data)
    os.replace(temporary, path)


def _write_pair(folder: Path, stem: str, issued: _Issued) -> tuple[Path, Path]:
    cert_file, key_file = folder / f"{stem}.crt", folder / f"{stem}.key"
    _write(key_file, _key_pem(issued.key), 0o600)
    _write(cert_file, _cert_pem(issued.cert), 0o644)
    return cert_file, key_file


def make_tls(host: str, name: str) -> TlsFiles:
    """A fresh CA and a serving certificate for ``host``, in a private temporary directory."""
    ca = new_ca(f"{name}-sim-ca")
    serving = issue_serving(ca, f"{name}-sim", [host])
    folder = Path(tempfile.mkdtemp(prefix=f"federation-sim-{name}-"))  # mkdtemp makes it 0700
    cert_file, key_file = _write_pair(folder, "tls", serving)
    return TlsFiles(str(cert_file), str(key_file), _cert_pem(ca.cert))


# -- the API server's lasting CA and certificate --------------------------------------------------------


def _load(folder: Path, stem: str) -> _Issued | None:
    try:
        cert = x509.load_pem_x509_certificate((folder / f"{stem}.crt").read_bytes())
        key = serialization.load_pem_private_key((folder / f"{stem}.key").read_bytes(), password=None)
    except (OSError, ValueError):
        return None
    return _Issued(cert, key) if isinstance(key, ec.EllipticCurvePrivateKey) else None


def _covers(cert: x509.Certificate, hosts: Iterable[str]) -> bool:
    try:
        present = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    return all(name in present for name in alt_names(hosts))


def _signed_by(cert: x509.Certificate, ca: _Issued) -> bool:
    try:
        cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _still_good(serving: _Issued | None, ca: _Issued, hosts: list[str]) -> bool:
    if serving is None:
        return False
    fresh = serving.cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC) > RENEW_BEFORE
    return fresh and _covers(serving.cert, hosts) and _signed_by(serving.cert, ca)


def ensure_serving_tls(folder: Path, hosts: Iterable[str], name: str = "federation") -> TlsFiles:
    """The CA and serving certificate under ``folder`` (``ca.crt``/``ca.key``, ``apiserver.crt``/``.key``),
    made on first use and kept; the serving certificate re-issued when it no longer fits (module doc)."""
    wanted = list(hosts)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    ca = _load(folder, "ca")
    if ca is None:
        ca = new_ca(f"{name}-ca")
        _write_pair(folder, "ca", ca)
    serving = _load(folder, "apiserver")
    if not _still_good(serving, ca, wanted):
        _write_pair(folder, "apiserver", issue_serving(ca, f"{name}-apiserver", wanted))
    return TlsFiles(str(folder / "apiserver.crt"), str(folder / "apiserver.key"), _cert_pem(ca.cert))
