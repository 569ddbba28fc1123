"""Real Karmada/Kosmos manifests (from their docs) parse and validate clean, and keep their shape."""

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from federation.model.cluster import Cluster
from federation.model.policy import ClusterPropagationPolicy, PropagationPolicy
from federation.model.rebalancer import WorkloadRebalancer
from federation.model.validation import parse_object, validate_object
from federation.model.workloadpolicy import WorkloadPolicy

MANIFESTS = Path(__file__).parent / "manifests"


def load(name):
    return yaml.safe_load((MANIFESTS / name).read_text())


@pytest.mark.parametrize("name", sorted(p.name for p in MANIFESTS.glob("*.yaml")))
def test_manifest_validates_clean_and_round_trips(name):
    manifest = load(name)
    assert validate_object(manifest) == []
    assert parse_object(manifest).dump() == manifest  # nothing defaulted in, nothing lost


def test_static_weight_policy():
    pp = parse_object(load("pp-static-weight.yaml"))
    assert isinstance(pp, PropagationPolicy)
    placement = pp.spec.placement
    assert placement.strategy() == "StaticWeight"
    weights = placement.static_weights()
    assert [(w.target_cluster.cluster_names, w.weight) for w in weights] == [
        (("member1",), 1),
        (("member2",), 2),
    ]


def test_spread_failover_policy():
    pp = parse_object(load("pp-spread-failover.yaml"))
    assert pp.spec.placement.strategy() == "DynamicWeight"
    app = pp.spec.failover.application
    assert (
        app.effective_purge_mode(),
        app.effective_grace_period_seconds(),
        app.effective_toleration_seconds(),
    ) == (
        "Gracefully",
        600,
        30,
    )
    assert [c.effective_field() for c in pp.spec.placement.spreads()] == ["region", "cluster"]


def test_cluster_propagation_policies():
    cpp = parse_object(load("cpp.yaml"))
    assert isinstance(cpp, ClusterPropagationPolicy)
    assert cpp.spec.placement.strategy() == "Duplicated"
    overflow = parse_object(load("cpp-affinities.yaml"))
    terms = overflow.spec.placement.affinity_terms()
    assert [t.affinity_name for t in terms] == ["local-idc", "backup"]
    assert terms[0].overflow_affinities[0].affinity_name == "cloud"


def test_rebalancer():
    wr = parse_object(load("rebalancer.yaml"))
    assert isinstance(wr, WorkloadRebalancer)
    refs = wr.spec.workloads
    assert [r.binding_name() for r in refs] == ["demo-deploy-1-deployment", "demo-role-clusterrole"]
    assert [r.is_cluster_scoped() for r in refs] == [False, True]
    assert wr.spec.ttl_seconds_after_finished == 60


def test_cluster_with_resource_summary():
    cluster = parse_object(load("cluster.yaml"))
    assert isinstance(cluster, Cluster)
    assert cluster.ready_status() == "True" and cluster.is_ready()
    summary = cluster.status.resource_summary
    assert summary.free("cpu") == Decimal("6.8")
    assert summary.free("memory") == Decimal(16318672 * 1024 - 290 * 1024**2)
    assert summary.has("pods") and not summary.has("nvidia.com/gpu")
    assert cluster.api_enabled("apps/v1", "Deployment") and not cluster.api_enabled("apps/v1", "DaemonSet")
    assert cluster.effective_zones() == ("us-east-1a", "us-east-1b")
    assert [str(t) for t in cluster.taints()] == ["dedicated=gpu:NoSchedule"]
    assert cluster.status.node_summary.ready_num == 3


def test_workload_policy():
    wlp = parse_object(load("workloadpolicy.yaml"))
    assert isinstance(wlp, WorkloadPolicy)
    assert wlp.spec.quota() == {"zone-a": 2, "zone-b": 3}
    assert (wlp.spec.effective_type(), wlp.spec.effective_method()) == ("Required", "Fill")
    assert wlp.spec.selects({"app": "nginx"})


def test_workload_policy_defaults():
    manifest = load("workloadpolicy.yaml")
    del manifest["spec"]["allocationType"], manifest["spec"]["allocationMethod"]
    wlp = parse_object(manifest)
    assert (wlp.spec.effective_type(), wlp.spec.effective_method()) == ("Preferred", "Balance")


def test_template_returns_the_manifest():
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
            },
        },
    }
    assert parse_object(deploy) == deploy
