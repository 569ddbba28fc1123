"""Extender settings: kube-scheduler's own ``extenders`` entries load unchanged (its keys, its duration and
``[]byte`` encodings, its validation rules), the federation's short forms still load, and bad input is
refused naming the field."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from federation.extenders import build_extenders, close_extenders
from federation.settings import load_settings
from federation.settings_extenders import (
    DEFAULT_HTTP_TIMEOUT_SECONDS,
    ExtenderSettings,
    duration_seconds,
)
from tests.extenders.extender_servers import make_pki

URL = "http://127.0.0.1:8888/scheduler"
SHIPPED = Path(__file__).resolve().parents[2] / "config" / "profiles" / "kube-scheduler-extenders.yaml"


def load(**entry: Any) -> ExtenderSettings:
    return ExtenderSettings.model_validate({"urlPrefix": URL, **entry})


def kube_scheduler_configuration(ca_pem: str) -> str:
    """A KubeSchedulerConfiguration's extenders as kube-scheduler reads them (caData is base64, as Go
    writes a []byte)."""
    ca_data = base64.b64encode(ca_pem.encode()).decode()
    return f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
  - urlPrefix: "https://127.0.0.1:8888/scheduler"
    filterVerb: "filter"
    prioritizeVerb: "prioritize"
    preemptVerb: ""
    bindVerb: "bind"
    weight: 5
    enableHTTPS: true
    tlsConfig:
      insecure: false
      serverName: extender.internal
      caData: {ca_data}
    httpTimeout: 1m30s
    nodeCacheCapable: true
    managedResources:
      - name: example.com/foo
        ignoredByScheduler: true
      - name: nvidia.com/gpu
    ignorable: false
"""


def test_a_kube_scheduler_extenders_entry_loads_unchanged(tmp_path: Path) -> None:
    pki = make_pki()
    kube = yaml.safe_load(kube_scheduler_configuration(pki.ca))
    config = tmp_path / "federation.yaml"
    config.write_text(yaml.safe_dump({"scheduler": {"extenders": kube["extenders"]}}))
    [extender] = load_settings(config).scheduler.extenders
    assert extender.urlPrefix == "https://127.0.0.1:8888/scheduler"
    assert (extender.filterVerb, extender.prioritizeVerb, extender.bindVerb) == (
        "filter",
        "prioritize",
        "bind",
    )
    assert extender.weight == 5 and extender.enableHTTPS and not extender.ignorable
    assert extender.httpTimeout == 90.0
    assert extender.clusterCacheCapable  # nodeCacheCapable, lifted to clusters
    assert extender.tlsConfig is not None and extender.tlsConfig.serverName == "extender.internal"
    assert extender.tlsConfig.caData == pki.ca  # base64 decoded to PEM
    assert [(r.name, r.ignoredByScheduler) for r in extender.managedResources] == [
        ("example.com/foo", True),
        ("nvidia.com/gpu", False),
    ]
    assert extender.ignored_resources == frozenset({"example.com/foo"})
    assert extender.apiVersion == "federation.io/v1"  # the cluster wire unless v1 is declared
    # load_settings re-validates a section after flags: a dumped entry is the same entry.
    assert ExtenderSettings.model_validate(extender.model_dump()) == extender
    built = build_extenders([extender])
    close_extenders(built)


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ("30s", 30.0),
        ("1m", 60.0),
        ("1m30s", 90.0),
        ("1h", 3600.0),
        ("500ms", 0.5),
        ("1.5s", 1.5),
        ("250us", 0.00025),
        ("2µs", 0.000002),
        (7, 7.0),
        (0.25, 0.25),
        ("7", 7.0),
        (0, DEFAULT_HTTP_TIMEOUT_SECONDS),  # kube-scheduler: a zero timeout means the 5 s default
        ("0s", DEFAULT_HTTP_TIMEOUT_SECONDS),
    ],
)
def test_http_timeout_is_a_go_duration_or_seconds(given: Any, seconds: float) -> None:
    assert duration_seconds(given) == pytest.approx(seconds)
    assert load(httpTimeout=given).httpTimeout == pytest.approx(seconds)


@pytest.mark.parametrize("given", ["soon", "5 s", "-1s", "1d", "", "1m30", True, -2])
def test_bad_http_timeout_is_refused_by_name(given: Any) -> None:
    with pytest.raises(ValidationError, match="httpTimeout"):
        load(httpTimeout=given)


def test_node_cache_capable_is_the_cluster_cache_alias() -> None:
    assert load(nodeCacheCapable=True).clusterCacheCapable
    assert load(clusterCacheCapable=True).clusterCacheCapable
    assert load(nodeCacheCapable=True, clusterCacheCapable=True).clusterCacheCapable
    assert not load().clusterCacheCapable
    with pytest.raises(ValidationError, match="nodeCacheCapable and clusterCacheCapable"):
        load(nodeCacheCapable=True, clusterCacheCapable=False)


def test_managed_resources_as_objects_or_names() -> None:
    loaded = load(managedResources=["Deployment", {"name": "nvidia.com/gpu", "ignoredByScheduler": True}])
    assert [r.model_dump() for r in loaded.managedResources] == [
        {"name": "Deployment", "ignoredByScheduler": False},
        {"name": "nvidia.com/gpu", "ignoredByScheduler": True},
    ]
    with pytest.raises(ValidationError, match=r"duplicate name.*nvidia\.com/gpu"):
        load(managedResources=["nvidia.com/gpu", {"name": "nvidia.com/gpu"}])
    with pytest.raises(ValidationError, match=r"managedResources\.0\.ignoredByScheduler"):
        load(managedResources=[{"name": "x.io/y", "ignoredByScheduler": "maybe"}])
    with pytest.raises(ValidationError, match=r"managedResources\.0\.ignored"):
        load(managedResources=[{"name": "x.io/y", "ignored": True}])


def test_tls_config_data_as_pem_or_base64_and_clients_go_rules() -> None:
    pki = make_pki()
    b64 = base64.b64encode(pki.client_cert.encode()).decode()
    key_b64 = base64.b64encode(pki.client_key.encode()).decode()
    tls = load(tlsConfig={"certData": b64, "keyData": key_b64, "caData": pki.ca}).tlsConfig
    assert tls is not None and (tls.certData, tls.keyData, tls.caData) == (
        pki.client_cert,
        pki.client_key,
        pki.ca,
    )
    refused = {
        "tlsConfig.caData": {"caData": "bm90IGEgY2VydGlmaWNhdGU="},  # base64 of "not a certificate"
        "caFile or caData, not both": {"caFile": "/ca.pem", "caData": pki.ca},
        "insecure: true with caFile": {"insecure": True, "caFile": "/ca.pem"},
        "needs both certFile/certData and keyFile": {"certFile": "/tls.crt"},
        "tlsConfig.verify": {"verify": False},
    }
    for message, tls_config in refused.items():
        with pytest.raises(ValidationError, match=message):
            load(tlsConfig=tls_config)


def test_preempt_verb_is_refused_with_the_reason() -> None:
    assert load(preemptVerb="").preemptVerb == ""
    with pytest.raises(ValidationError, match="preemptVerb") as refused:
        load(preemptVerb="preempt")
    assert "never preempts" in str(refused.value)


def test_kube_schedulers_validation_rules() -> None:
    assert load(filterVerb="filter", weight=0).weight == 0  # weight only matters to prioritize
    with pytest.raises(ValidationError, match="positive weight"):
        load(prioritizeVerb="prioritize", weight=0)
    with pytest.raises(ValidationError, match="urlPrefix"):
        load(urlPrefix="127.0.0.1:8888/scheduler")
    with pytest.raises(ValidationError, match="apiVersion"):
        load(apiVersion="v2")
    with pytest.raises(ValidationError, match="filterVerbs"):
        load(filterVerbs="filter")
    with pytest.raises(ValueError, match="only one extender can implement bind; found 2"):
        build_extenders([load(bindVerb="bind"), load(urlPrefix="http://127.0.0.1:9999/x", bindVerb="bind")])


def test_a_missing_ca_file_is_refused_when_extenders_are_built(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    entry = load(urlPrefix="https://127.0.0.1:8443/x", tlsConfig={"caFile": str(missing)})
    with pytest.raises(ValueError, match=r"scheduler\.extenders\[0\].*tlsConfig\.caFile"):
        build_extenders([entry])


def test_environment_variable_takes_kube_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [{"urlPrefix": URL, "filterVerb": "filter", "nodeCacheCapable": True, "httpTimeout": "2s"}]
    monkeypatch.delenv("FEDERATION_CONFIG", raising=False)
    monkeypatch.setenv("FEDERATION_SCHEDULER__EXTENDERS", json.dumps(entries))
    [extender] = load_settings().scheduler.extenders
    assert extender.clusterCacheCapable and extender.httpTimeout == 2.0


def test_the_shipped_settings_file_loads_and_builds() -> None:
    kube, cluster_shaped = load_settings(SHIPPED).scheduler.extenders
    assert (kube.apiVersion, kube.bindVerb, kube.httpTimeout) == ("v1", "bind", 30.0)
    assert kube.ignored_resources == frozenset({"nvidia.com/gpu"})
    assert (cluster_shaped.apiVersion, cluster_shaped.replicasVerb) == ("federation.io/v1", "replicas")
    close_extenders(build_extenders([kube, cluster_shaped]))
