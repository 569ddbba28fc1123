"""Real extenders for the extender tests, over real sockets on 127.0.0.1 (port 0), HTTP or TLS.

``KubeExtender`` is written to kube-scheduler's wire (``k8s.io/kube-scheduler/extender/v1``) as a Go
extender decodes and answers it: it reads the pod's container requests and each Node's labels and
``status.allocatable`` (or, when sent ``nodenames``, its own node cache), and answers
``ExtenderFilterResult``, ``HostPriorityList`` and ``ExtenderBindingResult``. It knows nothing of the
federation. ``make_pki`` issues a throwaway CA, a server certificate and a client certificate (cryptography).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

GPU = "nvidia.com/gpu"
SCORE_LABEL = "extender.example/score"
BROKEN_LABEL = "extender.example/broken"


def requested(pod: dict[str, Any], resource: str) -> int:
    """What the pod's containers request of ``resource`` (whole units, as a GPU is counted)."""
    containers = pod.get("spec", {}).get("containers") or []
    return sum(int(c.get("resources", {}).get("requests", {}).get(resource, "0")) for c in containers)


@dataclass
class KubeExtender:
    """A GPU extender in kube-scheduler's wire.

    filter: a node stays when its free GPUs (``status.allocatable``, or ``cache`` for ``nodenames``) cover
    the pod's request; otherwise ``failedNodes`` says "Insufficient nvidia.com/gpu"; a node labelled
    ``extender.example/broken`` is ``failedAndUnresolvableNodes``. prioritize: the node's
    ``extender.example/score`` label (or ``scores``). bind: records the args, refuses nodes in ``refuse_bind``.
    Knobs: ``status`` answered instead of 200, ``delay`` before answering, ``untagged`` answers with Go's
    untagged field names (``NodeNames``, ``FailedNodes``, ``Host``...), ``claim_extra`` adds a node to the
    passing list that was not offered.
    """

    cache: dict[str, int] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)
    refuse_bind: set[str] = field(default_factory=set)
    status: int = 200
    delay: float = 0.0
    untagged: bool = False
    claim_extra: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]

    def answer(self, verb: str, args: dict[str, Any]) -> Any:
        if verb == "filter":
            return self._keys(self.filter(args))
        if verb == "prioritize":
            return [self._keys(p) for p in self.prioritize(args)]
        if verb == "bind":
            refused = args["node"] in self.refuse_bind
            return self._keys({"error": f"node {args['node']} refused the pod" if refused else ""})
        if verb == "broken":
            return self._keys({"error": "extender exploded"})
        return None

    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        want = requested(args["pod"], GPU)
        kept: list[Any] = []
        failed, hard = {}, {}
        for name, labels, free in self._nodes(args):
            if labels.get(BROKEN_LABEL) == "true":
                hard[name] = "node is broken"
            elif free < want:
                failed[name] = f"Insufficient {GPU}"
            else:
                kept.append(name)
        result: dict[str, Any] = {"failedNodes": failed, "failedAndUnresolvableNodes": hard, "error": ""}
        if args.get("nodenames") is not None:
            result["nodenames"] = kept + ([self.claim_extra] if self.claim_extra else [])
        else:
            items = [n for n in args["nodes"]["items"] if n["metadata"]["name"] in kept]
            result["nodes"] = {"metadata": {}, "items": items}
        return result

    def prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for name, labels, _ in self._nodes(args):
            score = self.scores.get(name, int(labels.get(SCORE_LABEL, "0")))
            out.append({"host": name, "score": score})
        return out

    def _nodes(self, args: dict[str, Any]) -> Iterator[tuple[str, dict[str, str], int]]:
        if args.get("nodenames") is not None:
            for name in args["nodenames"]:
                yield name, {}, self.cache.get(name, 0)
            return
        for node in args["nodes"]["items"]:
            free = int(node.get("status", {}).get("allocatable", {}).get(GPU, "0"))
            yield node["metadata"]["name"], node["metadata"].get("labels") or {}, free

    def _keys(self, body: dict[str, Any]) -> dict[str, Any]:
        """Go's untagged struct fields are written with their Go names."""
        if not self.untagged:
            return body
        names = {"nodenames": "NodeNames", "nodes": "Nodes", "failedNodes": "FailedNodes"}
        names |= {"failedAndUnresolvableNodes": "FailedAndUnresolvableNodes", "error": "Error"}
        names |= {"host": "Host", "score": "Score"}
        return {names.get(k, k): v for k, v in body.items()}


class _Handler(BaseHTTPRequestHandler):
    extender: KubeExtender

    def do_POST(self) -> None:
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        if self.headers.get("Content-Type") != "application/json":
            self._send(415, {"error": "expected application/json"})
            return
        args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.extender.calls.append((verb, args))
        if self.extender.delay:
            time.sleep(self.extender.delay)
        body = self.extender.answer(verb, args)
        self._send(404 if body is None else self.extender.status, body)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(extender: KubeExtender, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve ``extender`` in a thread; yields its urlPrefix (``http(s)://127.0.0.1:<port>/scheduler``)."""
    handler = type("Handler", (_Handler,), {"extender": extender})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{httpd.server_address[1]}/scheduler"
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- a throwaway PKI ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    """PEM texts of a CA, a server certificate (SANs: the given DNS names and IPs) and a client certificate."""

    ca: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str

    def write(self, directory: Path) -> dict[str, str]:
        """Every PEM as a file under ``directory``; their paths by name."""
        directory.mkdir(parents=True, exist_ok=True)
        paths = {}
        for name in ("ca", "server_cert", "server_key", "client_cert", "client_key"):
            path = directory / f"{name}.pem"
            path.write_text(getattr(self, name))
            paths[name] = str(path)
        return paths

    def server_context(self, directory: Path, require_client_cert: bool = False) -> ssl.SSLContext:
        paths = self.write(directory)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(paths["server_cert"], paths["server_key"])
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cadata=self.ca)
        return context


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    encoding, fmt = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    return key.private_bytes(encoding, fmt, serialization.NoEncryption()).decode()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: str, issuer: x509.Name, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )


def _leaf(
    subject: str,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName],
) -> tuple[str, str]:
    key = _key()
    builder = (
        _builder(subject, ca_cert.subject, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM).decode(), _pem_key(key)


def make_pki(
    dns_names: tuple[str, ...] = ("extender.internal",), ips: tuple[str, ...] = ("127.0.0.1",)
) -> Pki:
    ca_key = _key()
    usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    ca_cert = (
        _builder("test extender CA", _name("test extender CA"), ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    server = _leaf("extender", ca_key, ca_cert, ExtendedKeyUsageOID.SERVER_AUTH, sans)
    client = _leaf("federation-scheduler", ca_key, ca_cert, ExtendedKeyUsageOID.CLIENT_AUTH, [])
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM).decode()
    return Pki(ca_pem, server[0], server[1], client[0], client[1])
