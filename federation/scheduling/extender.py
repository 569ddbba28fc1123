"""Scheduler extenders: the protocol the engine calls and the results it reads.

kube-scheduler's extender contract (``k8s.io/kube-scheduler/extender/v1``) lifted from nodes to clusters.
The engine only sees ``Extender``; ``federation.extenders`` implements it over HTTP (both wires, TLS), in
a layer the scheduler controller and the live plan endpoint share.

Invariants:
- ``filter`` returns the clusters that stay (``cluster_names``); ``failed`` and ``failed_unresolvable`` map
  a cluster to its reason; ``error`` non-empty means the call failed as a whole.
- ``prioritize`` returns scores 0..10 (``MAX_EXTENDER_PRIORITY``); the engine scales them to 0..100 and
  multiplies by the extender's weight.
- ``max_replicas`` returns an upper bound of additional replicas per cluster, or None when the extender has
  no replicas verb; the engine takes the minimum with its own estimate.
- ``bind`` tells a ``binder`` one target of a decided placement (kube-scheduler's bind verb); it is called by
  the scheduler after the decision and before the write, never by a plan.
- ``ignored_resources`` are kube-scheduler's ``ignoredByScheduler`` managed resources: the engine's own fit
  and capacity estimate leave them to the extender.
- Any failure raises ``ExtenderError``; the engine fails the attempt (SchedulerError) unless ``ignorable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from federation.scheduling.types import BindingInput, ClusterSnapshot, TargetCluster

MAX_EXTENDER_PRIORITY = 10


class ExtenderError(Exception):
    """An extender could not answer (unreachable, timeout, bad reply, or its own ``error`` field)."""


@dataclass(frozen=True, slots=True)
class ExtenderFilterResult:
    cluster_names: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=dict)
    failed_unresolvable: Mapping[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True, slots=True)
class HostPriority:
    host: str
    score: int


class Extender(Protocol):
    """One configured extender (``name`` is its urlPrefix, used in explanations and errors)."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int: ...

    @property
    def ignorable(self) -> bool: ...

    @property
    def binder(self) -> bool: ...

    @property
    def ignored_resources(self) -> frozenset[str]: ...

    def is_interested(self, binding: BindingInput) -> bool: ...

    def filter(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> ExtenderFilterResult: ...

    def prioritize(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]
    ) -> list[HostPriority]: ...

    def max_replicas(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]
    ) -> Mapping[str, int] | None: ...

    def bind(self, binding: BindingInput, target: TargetCluster) -> None: ...
