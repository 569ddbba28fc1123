"""kube-scheduler's wire (``apiVersion: v1``) against a real extender written to it (``KubeExtender``, served
over a real socket): the pod and Node objects it decodes, ``ExtenderFilterResult`` / ``HostPriorityList`` /
``ExtenderBindingResult`` read back (Go's untagged field names too), kube-scheduler's error rules, and
``ignoredByScheduler``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from federation.extenders import HttpExtender
from federation.scheduling.engine import schedule
from federation.scheduling.extender import ExtenderError
from federation.scheduling.types import BindingInput, ClusterSnapshot, TargetCluster
from federation.settings_extenders import ExtenderSettings
from tests.extenders.extender_servers import BROKEN_LABEL, GPU, SCORE_LABEL, KubeExtender, serving
from tests.scheduling.sched_factories import DYNAMIC, make_binding, make_cluster

GIB = 1024**3
TOLERATION = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
PLACEMENT = {**DYNAMIC, "clusterTolerations": [TOLERATION]}
ONE_CLUSTER = {
    **PLACEMENT,
    "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
}


def gpu_cluster(name: str, gpus: int, used: int = 0, **overrides: Any) -> ClusterSnapshot:
    allocatable = {"cpu": 16_000, "memory": 64 * GIB, "pods": 110, GPU: gpus}
    return make_cluster(name, allocatable=allocatable, allocated={"cpu": 2_000, GPU: used}, **overrides)


CLUSTERS = [
    gpu_cluster("gpu-a", 8, used=2, labels={SCORE_LABEL: "3", "tier": "gold"}, region="eu", zones=("eu-1",)),
    gpu_cluster("gpu-b", 4, used=3, labels={SCORE_LABEL: "9"}),
    gpu_cluster("gpu-c", 8, labels={SCORE_LABEL: "6"}, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
    gpu_cluster("broken", 8, labels={BROKEN_LABEL: "true"}),
]


def gpu_binding(replicas: int = 4, placement: dict[str, Any] | None = None) -> BindingInput:
    request = {"cpu": 500, "memory": GIB, GPU: 2}
    return make_binding(replicas, placement or PLACEMENT, uid="uid-1", resource_request=request)


@contextmanager
def kube_extender(kube: KubeExtender, **entry: Any) -> Iterator[HttpExtender]:
    """A kube-wire extender on a live server; like a GPU extender configured for kube-scheduler, it manages
    GPUs with ``ignoredByScheduler`` (the federation's own fit leaves them to it) unless told otherwise."""
    with serving(kube) as url:
        defaults = {"apiVersion": "v1", "managedResources": [{"name": GPU, "ignoredByScheduler": True}]}
        settings = ExtenderSettings.model_validate({"urlPrefix": url, **defaults, **entry})
        extender = HttpExtender(settings)
        try:
            yield extender
        finally:
            extender.close()


def test_filter_sends_the_pod_and_clusters_as_nodes() -> None:
    kube = KubeExtender()
    with kube_extender(kube, filterVerb="filter") as extender:
        result = schedule(gpu_binding(), CLUSTERS, extenders=[extender])
    assert result.succeeded
    assert {t.name for t in result.clusters} <= {"gpu-a", "gpu-c"}
    assert sum(t.replicas for t in result.clusters) == 4
    entries = result.explanation["clusters"]
    plugin = f"Extender({extender.name})"
    assert entries["gpu-b"]["filter"]["plugin"] == plugin
    assert entries["gpu-b"]["filter"]["reason"] == "Insufficient nvidia.com/gpu"
    assert entries["broken"]["filter"]["reason"] == "node is broken"  # failedAndUnresolvableNodes
    assert entries["gpu-a"]["filter"]["passed"] and entries["gpu-c"]["filter"]["passed"]
    [(verb, args)] = kube.calls
    assert verb == "filter" and set(args) == {"pod", "nodes"}
    pod = args["pod"]
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    assert {k: pod["metadata"][k] for k in ("name", "namespace", "uid")} == {
        "name": "nginx",
        "namespace": "default",
        "uid": "uid-1",
    }
    annotations = pod["metadata"]["annotations"]
    assert annotations["scheduling.federation.io/replicas"] == "4"
    assert json.loads(annotations["scheduling.federation.io/binding"])["kind"] == "Deployment"
    [container] = pod["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": str(GIB), GPU: "2"}
    assert pod["spec"]["tolerations"] == [TOLERATION]
    nodes = args["nodes"]["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["gpu-a", "gpu-b", "gpu-c", "broken"]
    gpu_a = nodes[0]
    assert (gpu_a["apiVersion"], gpu_a["kind"]) == ("v1", "Node")
    assert gpu_a["metadata"]["labels"] == {
        "kubernetes.io/hostname": "gpu-a",
        "topology.kubernetes.io/region": "eu",
        "topology.kubernetes.io/zone": "eu-1",
        SCORE_LABEL: "3",
        "tier": "gold",
    }
    # capacity: the cluster's allocatable; allocatable: what is still free for new replicas.
    assert gpu_a["status"]["capacity"] == {"cpu": "16", "memory": str(64 * GIB), "pods": "110", GPU: "8"}
    assert gpu_a["status"]["allocatable"] == {"cpu": "14", "memory": str(64 * GIB), "pods": "110", GPU: "6"}
    assert gpu_a["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert nodes[2]["spec"]["taints"] == [{"key": "gpu", "effect": "NoSchedule"}]


def test_node_cache_capable_sends_and_reads_nodenames() -> None:
    kube = KubeExtender(cache={"gpu-a": 6, "gpu-b": 1, "gpu-c": 8, "broken": 8})
    with kube_extender(kube, filterVerb="filter", nodeCacheCapable=True) as extender:
        answer = extender.filter(gpu_binding(), CLUSTERS)
    assert answer.cluster_names == ("gpu-a", "gpu-c", "broken")
    assert answer.failed == {"gpu-b": "Insufficient nvidia.com/gpu"}
    [(_, args)] = kube.calls
    assert args["nodenames"] == ["gpu-a", "gpu-b", "gpu-c", "broken"] and "nodes" not in args


@pytest.mark.parametrize("untagged", [False, True], ids=["json-tags", "go-field-names"])
def test_prioritize_reads_the_host_priority_list_weighted(untagged: bool) -> None:
    kube = KubeExtender(untagged=untagged)
    with kube_extender(kube, filterVerb="filter", prioritizeVerb="prioritize", weight=2) as extender:
        result = schedule(gpu_binding(3, ONE_CLUSTER), CLUSTERS, extenders=[extender])
    assert [(t.name, t.replicas) for t in result.clusters] == [("gpu-c", 3)]  # score 6 beats gpu-a's 3
    parts = result.explanation["clusters"]
    assert parts["gpu-c"]["scores"][f"Extender({extender.name})"] == {"score": 60, "weight": 2}
    assert parts["gpu-a"]["scores"][f"Extender({extender.name})"] == {"score": 30, "weight": 2}
    assert parts["gpu-b"]["filter"]["reason"] == "Insufficient nvidia.com/gpu"
    assert kube.verbs() == ["filter", "prioritize"]
    assert [n["metadata"]["name"] for n in kube.calls[1][1]["nodes"]["items"]] == ["gpu-a", "gpu-c"]


def test_bind_sends_exactly_extender_binding_args() -> None:
    kube = KubeExtender(refuse_bind={"gpu-c"})
    with kube_extender(kube, bindVerb="bind") as extender:
        assert extender.binder
        extender.bind(gpu_binding(), TargetCluster("gpu-a", 2))
        with pytest.raises(ExtenderError, match="node gpu-c refused the pod"):
            extender.bind(gpu_binding(), TargetCluster("gpu-c", 2))
    assert kube.calls[0] == (
        "bind",
        {"podName": "nginx", "podNamespace": "default", "podUID": "uid-1", "node": "gpu-a"},
    )


def test_bind_on_the_cluster_wire_adds_the_replicas() -> None:
    kube = KubeExtender()
    with serving(kube) as url:
        extender = HttpExtender(ExtenderSettings(urlPrefix=url, bindVerb="bind"))
        extender.bind(gpu_binding(), TargetCluster("gpu-a", 2))
        extender.close()
    assert kube.calls == [
        (
            "bind",
            {
                "podName": "nginx",
                "podNamespace": "default",
                "podUID": "uid-1",
                "node": "gpu-a",
                "replicas": 2,
            },
        )
    ]


def test_any_answer_but_200_is_an_error_unless_ignorable() -> None:
    with kube_extender(KubeExtender(status=201), filterVerb="filter") as extender:
        with pytest.raises(ExtenderError, match=r"failed filter with extender at URL .*, code 201"):
            extender.filter(gpu_binding(), CLUSTERS)
        failed = schedule(gpu_binding(), CLUSTERS, extenders=[extender])
    assert failed.result == "SchedulerError" and "code 201" in failed.message
    assert not failed.writes_clusters
    with kube_extender(KubeExtender(status=201), filterVerb="filter", ignorable=True) as lenient:
        skipped = schedule(gpu_binding(), CLUSTERS, extenders=[lenient])
    assert skipped.succeeded  # the ignorable extender's filter kept every cluster
    assert skipped.explanation["clusters"]["gpu-b"]["filter"]["passed"]


def test_kube_schedulers_answer_rules() -> None:
    ghost = KubeExtender(cache={"gpu-a": 8}, claim_extra="ghost")
    cases = [
        (ghost, {"filterVerb": "filter", "nodeCacheCapable": True}, "not in the input list: ghost"),
        (KubeExtender(), {"filterVerb": "broken"}, "extender exploded"),  # its own error field
        (KubeExtender(), {"filterVerb": "nothing-here"}, "code 404"),
    ]
    for kube, entry, message in cases:
        with kube_extender(kube, **entry) as extender, pytest.raises(ExtenderError, match=message):
            extender.filter(gpu_binding(), CLUSTERS)


def test_timeout_fails_the_attempt() -> None:
    with kube_extender(KubeExtender(delay=1.0), filterVerb="filter", httpTimeout="200ms") as extender:
        result = schedule(gpu_binding(), CLUSTERS, extenders=[extender])
    assert result.result == "SchedulerError"
    assert "timed out after 0.2s" in result.message


@pytest.mark.parametrize("ignored", [False, True])
def test_ignored_by_scheduler_leaves_the_resource_to_the_extender(ignored: bool) -> None:
    # The clusters do not report GPUs at all: only the extender knows (its node cache).
    plain = [make_cluster("plain-a"), make_cluster("plain-b")]
    kube = KubeExtender(cache={"plain-a": 8, "plain-b": 0})
    managed = [{"name": GPU, "ignoredByScheduler": ignored}]
    entry = {"filterVerb": "filter", "nodeCacheCapable": True, "managedResources": managed}
    with kube_extender(kube, **entry) as extender:
        result = schedule(gpu_binding(3), plain, extenders=[extender])
    if ignored:
        assert [(t.name, t.replicas) for t in result.clusters] == [("plain-a", 3)]
        requests = kube.calls[0][1]["pod"]["spec"]["containers"][0]["resources"]["requests"]
        assert requests[GPU] == "2"  # the extender still sees the whole request
    else:  # the federation's own fit finds no GPU anywhere: nothing is placed
        assert not result.succeeded and result.clusters == ()
        assert "nvidia.com/gpu" in result.message
