"""Test helpers for member-cluster tests: a deadline poller, simulator configs, manifest factories."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from federation.sim import SimulatorConfig

T = TypeVar("T")


def wait_for(probe: Callable[[], T], timeout: float = 10.0, interval: float = 0.05, what: str = "") -> T:
    """Poll ``probe`` until it returns something truthy; fail the test at the deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what or probe}; last value: {last!r}")


def make_config(**overrides: Any) -> SimulatorConfig:
    defaults: dict[str, Any] = {"name": "member1", "token": "secret-token", "ready_delay": 0.2}
    defaults.update(overrides)
    return SimulatorConfig(**defaults)


def deployment(
    name: str,
    replicas: int,
    cpu: str = "100m",
    memory: str = "64Mi",
    namespace: str = "default",
    image: str = "nginx",
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": image,
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                        }
                    ]
                },
            },
        },
    }
