"""HTTPS extenders with a CA generated for the test, over real TLS sockets: kube-scheduler's ``enableHTTPS`` /
``tlsConfig`` rules (a CA from ``caFile`` or ``caData`` replaces the system roots, ``enableHTTPS`` without
one does not verify, ``serverName`` is the name checked, client certificates from files or data)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from federation.extenders import build_extenders, close_extenders
from federation.scheduling.extender import ExtenderError
from tests.extenders.extender_servers import KubeExtender, Pki, make_pki, serving
from tests.scheduling.sched_factories import make_binding, make_cluster

CLUSTERS = [make_cluster("member1"), make_cluster("member2")]


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki(dns_names=("extender.internal",), ips=("127.0.0.1",))


@pytest.fixture
def files(pki: Pki, tmp_path: Path) -> dict[str, str]:
    return pki.write(tmp_path)


@pytest.fixture
def https_url(pki: Pki, tmp_path: Path) -> Iterator[str]:
    with serving(KubeExtender(), tls=pki.server_context(tmp_path / "server")) as url:
        yield url


@pytest.fixture
def mutual_tls_url(pki: Pki, tmp_path: Path) -> Iterator[str]:
    context = pki.server_context(tmp_path / "server", require_client_cert=True)
    with serving(KubeExtender(), tls=context) as url:
        yield url


def filters(url: str, **entry: Any) -> tuple[str, ...]:
    """Build the extender as the scheduler does and run one filter call through it."""
    [extender] = build_extenders([{"urlPrefix": url, "apiVersion": "v1", "filterVerb": "filter", **entry}])
    try:
        return extender.filter(make_binding(1), CLUSTERS).cluster_names
    finally:
        close_extenders([extender])


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_ca_verifies_the_server_from_a_file_or_data(
    https_url: str, pki: Pki, files: dict[str, str]
) -> None:
    assert filters(https_url, tlsConfig={"caFile": files["ca"]}) == ("member1", "member2")
    assert filters(https_url, tlsConfig={"caData": b64(pki.ca)}) == ("member1", "member2")
    assert filters(https_url, enableHTTPS=True, tlsConfig={"caData": pki.ca}) == ("member1", "member2")


def test_without_a_ca_the_system_roots_refuse_the_test_ca(https_url: str) -> None:
    with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
        filters(https_url)


def test_enable_https_without_a_ca_does_not_verify_as_kube_scheduler(https_url: str) -> None:
    assert filters(https_url, enableHTTPS=True) == ("member1", "member2")
    assert filters(https_url, tlsConfig={"insecure": True}) == ("member1", "member2")


def test_server_name_is_the_name_checked(pki: Pki, tmp_path: Path, files: dict[str, str]) -> None:
    only_dns = make_pki(dns_names=("extender.internal",), ips=())
    with serving(KubeExtender(), tls=only_dns.server_context(tmp_path / "server")) as url:
        ca = {"caData": only_dns.ca}
        with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
            filters(url, tlsConfig=ca)  # 127.0.0.1 is not in the certificate
        assert filters(url, tlsConfig={**ca, "serverName": "extender.internal"}) == ("member1", "member2")
        with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
            filters(url, tlsConfig={**ca, "serverName": "other.internal"})


def test_client_certificate_from_files_or_data(mutual_tls_url: str, pki: Pki, files: dict[str, str]) -> None:
    ca = {"caFile": files["ca"]}
    with pytest.raises(ExtenderError):
        filters(mutual_tls_url, tlsConfig=ca)  # the server requires a client certificate
    from_files = {**ca, "certFile": files["client_cert"], "keyFile": files["client_key"]}
    assert filters(mutual_tls_url, tlsConfig=from_files) == ("member1", "member2")
    from_data = {**ca, "certData": b64(pki.client_cert), "keyData": b64(pki.client_key)}
    assert filters(mutual_tls_url, tlsConfig=from_data) == ("member1", "member2")


def test_bad_key_material_is_refused_at_build(pki: Pki, files: dict[str, str]) -> None:
    wrong_key = {"certData": pki.client_cert, "keyData": pki.server_key}
    with pytest.raises(
        ValueError, match=r"scheduler\.extenders\[0\].*client certificate and key do not load"
    ):
        build_extenders([{"urlPrefix": "https://127.0.0.1:1/x", "tlsConfig": wrong_key}])
    missing = {"certFile": files["client_cert"] + ".gone", "keyFile": files["client_key"]}
    with pytest.raises(ValueError, match=r"tlsConfig\.certFile: cannot read"):
        build_extenders([{"urlPrefix": "https://127.0.0.1:1/x", "tlsConfig": missing}])
