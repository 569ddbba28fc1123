"""Simulator settings and fault state.

Invariants:
- ``SimulatorConfig`` is a frozen value: what nodes exist and how the server behaves at start.
- ``Faults`` is the only mutable knob set at run time (``/_sim/faults``, ``RunningSimulator.set_faults``);
  its random source is seeded, so a given seed and request sequence always fail the same requests.
- ``unhealthy`` is replaced, never changed in place, and each change bumps ``generation``: the cluster
  turns the difference into writes (``status_writes``) at its next request.
"""

from __future__ import annotations

import random
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class SimulatorConfig:
    """One simulated member cluster."""

    name: str = "member1"
    host: str = "127.0.0.1"
    port: int = 0
    nodes: int = 3
    node_cpu: str = "8"
    node_memory: str = "32Gi"
    node_storage: str = "200Gi"
    node_pods: int = 110
    node_gpu: int = 0
    # Other extended resources per node, e.g. {"example.com/fpga": "2"}.
    node_extended: dict[str, str] = field(default_factory=dict)
    region: str = ""
    zone: str = ""
    ready_delay: float = 0.5
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    kubernetes_version: str = "v1.32.0"
    # HTTPS with a throw-away CA (kubectl sends tokens only over TLS); plain HTTP when False.
    tls: bool = True
    seed: int = 0
    # Faults in force at start (same shape as the admin endpoint's body).
    down: bool = False
    latency_ms: int = 0
    error_rate: float = 0.0
    unhealthy: tuple[str, ...] = ()


class Faults:
    """Run-time fault injection: down, added latency, error rate, unhealthy workloads (``ns/name``)."""

    def __init__(self, config: SimulatorConfig) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(config.seed)
        self.down = config.down
        self.latency_ms = config.latency_ms
        self.error_rate = config.error_rate
        self.unhealthy: set[str] = set(config.unhealthy)
        # Counts changes of ``unhealthy`` (a new set each time), so the cluster notices one in O(1).
        self.generation = 0

    def update(self, changes: dict[str, Any]) -> None:
        """Apply a partial update; keys not given keep their value. Raises ValueError on bad input."""
        with self._lock:
            if "down" in changes:
                self.down = bool(changes["down"])
            if "latency_ms" in changes:
                self.latency_ms = _non_negative_int(changes["latency_ms"], "latency_ms")
            if "error_rate" in changes:
                self.error_rate = _rate(changes["error_rate"])
            if "unhealthy" in changes:
                unhealthy = set(_names(changes["unhealthy"]))
                if unhealthy != self.unhealthy:
                    self.unhealthy = unhealthy
                    self.generation += 1
            if "seed" in changes:
                self._random = random.Random(int(changes["seed"]))

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "down": self.down,
                "latency_ms": self.latency_ms,
                "error_rate": self.error_rate,
                "unhealthy": sorted(self.unhealthy),
            }

    def roll_error(self) -> bool:
        """True when this request should fail under the configured error rate (deterministic per seed)."""
        with self._lock:
            return self.error_rate > 0 and self._random.random() < self.error_rate

    def is_unhealthy(self, namespace: str, name: str) -> bool:
        if not self.unhealthy:  # the usual case, asked for every pod a read renders: no lock, no string
            return False
        with self._lock:
            return f"{namespace}/{name}" in self.unhealthy


def _non_negative_int(value: Any, name: str) -> int:
    number = int(value)
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return number


def _rate(value: Any) -> float:
    rate = float(value)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"error_rate must be within [0, 1], got {value!r}")
    return rate


def _names(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and "/" in v for v in value):
        raise ValueError(f'unhealthy must be a list of "namespace/name" strings, got {value!r}')
    return list(value)
