import pytest

from federation.model import kinds


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("pp", "PropagationPolicy"),
        ("CPP", "ClusterPropagationPolicy"),
        ("rb", "ResourceBinding"),
        ("crb", "ClusterResourceBinding"),
        ("wk", "Work"),
        ("works", "Work"),
        ("wr", "WorkloadRebalancer"),
        ("wlp", "WorkloadPolicy"),
        ("cluster", "Cluster"),
        ("Clusters", "Cluster"),
        ("deploy", "Deployment"),
        ("Deployment", "Deployment"),
        ("deployments.apps", "Deployment"),
        ("sts", "StatefulSet"),
        ("cj", "CronJob"),
        ("netpol", "NetworkPolicy"),
        ("hpa", "HorizontalPodAutoscaler"),
        ("crd", "CustomResourceDefinition"),
        ("cm", "ConfigMap"),
    ],
)
def test_lookup(name, kind):
    assert kinds.lookup(name).kind == kind


def test_lookup_unknown_is_a_clear_key_error():
    with pytest.raises(KeyError, match="unknown resource type 'gizmo'"):
        kinds.lookup("gizmo")


def test_paths_and_versions():
    deploy = kinds.lookup("deploy")
    assert (deploy.api_version, deploy.path_prefix) == ("apps/v1", "/apis/apps/v1")
    pod = kinds.lookup("po")
    assert (pod.api_version, pod.path_prefix, pod.namespaced) == ("v1", "/api/v1", True)
    assert kinds.by_gvk("work.karmada.io/v1alpha2", "ResourceBinding") is kinds.lookup("rb")
    assert kinds.by_path("", "v1", "namespaces") is kinds.lookup("ns")
    assert kinds.by_path("apps", "v1", "gizmos") is None


def test_karmada_kinds_and_scopes():
    assert {k.kind for k in kinds.karmada_kinds()} == {
        "PropagationPolicy",
        "ClusterPropagationPolicy",
        "ResourceBinding",
        "ClusterResourceBinding",
        "Work",
        "Cluster",
        "WorkloadRebalancer",
        "ClusterTaintPolicy",
    }
    assert all(kinds.is_karmada_kind(k) for k in kinds.karmada_kinds())
    assert not kinds.is_karmada_kind(kinds.lookup("wlp")) and kinds.is_federation_kind(kinds.lookup("wlp"))
    assert not kinds.lookup("cpp").namespaced and kinds.lookup("pp").namespaced
    assert not kinds.lookup("wr").namespaced and not kinds.lookup("cluster").namespaced
    assert not kinds.lookup("clustertaintpolicies").namespaced


def test_every_name_is_unique():
    seen = {}
    for info in kinds.all_kinds():
        for name in info.names():
            assert seen.setdefault(name.lower(), info) is info


def test_template_kind():
    info = kinds.template_kind("example.com/v1", "Widget", "widgets", namespaced=False)
    assert (info.group, info.path_prefix, info.namespaced, info.plural) == (
        "example.com",
        "/apis/example.com/v1",
        False,
        "widgets",
    )
    assert kinds.template_kind("apps/v1", "Deployment") is kinds.lookup("deploy")
    assert not kinds.is_federation_kind(info)


@pytest.mark.parametrize(
    ("kind", "plural"),
    [("Widget", "widgets"), ("Gateway", "gateways"), ("FooPolicy", "foopolicies"), ("Ingress", "ingresses")],
)
def test_unregistered_kinds_get_kubernetes_plural_guess(kind: str, plural: str) -> None:
    """The API, the CLI and the member clients share one rule (Kubernetes' UnsafeGuessKindToResource)."""
    assert kinds.guess_plural(kind) == plural
    assert kinds.template_kind("example.io/v1", kind).plural == plural
