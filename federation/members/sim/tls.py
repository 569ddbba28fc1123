"""Throw-away TLS material for a simulator: a private CA and a serving certificate it signs.

Why: kubectl (client-go) only sends bearer tokens over TLS, so a token-checking simulator must serve HTTPS;
the kubeconfig carries the CA as ``certificate-authority-data`` and clients verify the server normally.

Invariants: a fresh CA per simulator (nothing is shared or persisted beyond the temp files the server reads);
the serving certificate names ``localhost``, ``127.0.0.1`` and the configured host.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """Paths uvicorn reads, plus the CA in kubeconfig form."""

    cert_file: str
    key_file: str
    ca_pem: bytes

    @property
    def ca_data(self) -> str:
        return base64.b64encode(self.ca_pem).decode()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _alt_names(host: str) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    try:
        address = ipaddress.ip_address(host)
        if str(address) != "127.0.0.1":
            names.append(x509.IPAddress(address))
    except ValueError:
        if host != "localhost":
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _builder(subject: str, issuer: str, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
    )


def make_tls(host: str, name: str) -> TlsFiles:
    """Generate a CA and a serving cert for ``host``; write cert and key to a private temp directory."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        _builder(f"{name}-sim-ca", f"{name}-sim-ca", ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(f"{name}-sim", f"{name}-sim-ca", key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_alt_names(host), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    folder = tempfile.mkdtemp(prefix=f"federation-sim-{name}-")
    cert_file, key_file = os.path.join(folder, "tls.crt"), os.path.join(folder, "tls.key")
    with open(cert_file, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
        out.write(key_pem)
    return TlsFiles(cert_file, key_file, ca_cert.public_bytes(serialization.Encoding.PEM))
