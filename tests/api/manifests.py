"""Real Karmada/Kosmos manifests, as Karmada's documentation shows them."""

PROPAGATION_POLICY = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "nginx-propagation", "namespace": "default"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
        "placement": {
            "clusterAffinity": {"clusterNames": ["member1", "member2"]},
            "replicaScheduling": {
                "replicaDivisionPreference": "Weighted",
                "replicaSchedulingType": "Divided",
                "weightPreference": {
                    "staticWeightList": [
                        {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                        {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1},
                    ]
                },
            },
        },
    },
}

CLUSTER_PROPAGATION_POLICY = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "ClusterPropagationPolicy",
    "metadata": {"name": "example-policy"},
    "spec": {
        "resourceSelectors": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "name": "example-clusterrole",
            }
        ],
        "placement": {
            "clusterAffinity": {"clusterNames": ["member1"]},
            "clusterTolerations": [
                {
                    "key": "cluster.karmada.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}],
        },
    },
}

WORKLOAD_REBALANCER = {
    "apiVersion": "apps.karmada.io/v1alpha1",
    "kind": "WorkloadRebalancer",
    "metadata": {"name": "demo"},
    "spec": {
        "workloads": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy-1", "namespace": "default"},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy-2", "namespace": "default"},
        ],
        "ttlSecondsAfterFinished": 60,
    },
}

CLUSTER = {
    "apiVersion": "cluster.karmada.io/v1alpha1",
    "kind": "Cluster",
    "metadata": {"name": "member1", "labels": {"env": "prod"}},
    "spec": {
        "apiEndpoint": "https://172.18.0.3:6443",
        "secretRef": {"namespace": "karmada-cluster", "name": "member1"},
        "syncMode": "Push",
        "provider": "aws",
        "region": "us-east-1",
        "zones": ["us-east-1a"],
        "taints": [{"key": "maintenance", "effect": "NoSchedule"}],
    },
}

WORKLOAD_POLICY = {
    "apiVersion": "kosmos.io/v1alpha1",
    "kind": "WorkloadPolicy",
    "metadata": {"name": "split", "namespace": "default"},
    "spec": {
        "topologyKey": "topology.kubernetes.io/zone",
        "allocationPolicy": [{"name": "member", "replicas": 1}, {"name": "host", "replicas": 3}],
        "allocationType": "Required",
        "allocationMethod": "Fill",
        "labelSelector": {"matchLabels": {"app": "nginx"}},
    },
}

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
        },
    },
}

CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cfg", "namespace": "default"},
    "data": {"a": "1"},
}

CLUSTER_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "example-clusterrole"},
    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
}

# The CustomResourceDefinition that makes CUSTOM_RESOURCE's kind servable (any other kind is 404).
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.io"},
    "spec": {
        "group": "example.io",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wdg"]},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
                "subresources": {"status": {}},
            }
        ],
    },
}
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

CUSTOM_RESOURCE = {
    "apiVersion": "example.io/v1",
    "kind": "Widget",
    "metadata": {"name": "w1", "namespace": "default"},
    "spec": {"size": 3},
}
