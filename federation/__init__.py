"""federation: a multi-cluster Kubernetes federation control plane."""

__version__ = "0.1.0"
