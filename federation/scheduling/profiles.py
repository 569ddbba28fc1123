"""Service-class profiles: which fit rules (headroom) and score weights a workload is scheduled with.

The disk-aware database scheduler (a customised kube-scheduler for MySQL, pika and Redis) runs different
predicates and priorities per *service class*, named by an annotation on the workload. Here a class is a
``ServiceProfile`` (``types``) in ``EngineConfig.profiles``; a workload without the annotation, or whose
class no profile names, gets the default profile (``EngineConfig.profile_for``).

Invariants:
- ``service_class_of`` reads ``scheduling.federation.io/service-class`` from the workload's own annotations,
  then from its pod template's (the original scheduler read it from the pod); "" when neither has it.
- ``engine_config`` is the only conversion from the scheduler settings to an ``EngineConfig``: the scheduler
  controller, the live plan endpoint and ``federation plan`` all call it, so they decide alike.
- A profile that leaves ``score_weights`` or ``headroom`` out takes the top-level one whole (no merging:
  what a profile states is all of its rules for that field).
- Headroom floors are quantities in the resource's base unit: milli-cores for ``cpu``, units otherwise.
- Pure: no I/O. Bad names raise ``ValueError`` (``EngineConfig`` validates them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from federation.model.quantity import to_int, to_milli
from federation.scheduling.types import CPU, EngineConfig, Headroom, ServiceProfile

SERVICE_CLASS_ANNOTATION = "scheduling.federation.io/service-class"


class HeadroomLike(Protocol):
    """One ``settings.HeadroomRule`` (read-only)."""

    @property
    def percent(self) -> float: ...
    @property
    def floor(self) -> str: ...
    @property
    def strict(self) -> bool: ...
    @property
    def request_factor(self) -> int: ...


class ProfileLike(Protocol):
    """One ``settings.ProfileSettings``: None takes the top-level field."""

    @property
    def score_weights(self) -> Mapping[str, int] | None: ...
    @property
    def headroom(self) -> Mapping[str, HeadroomLike] | None: ...


class SchedulerSettingsLike(Protocol):
    """The part of ``settings.SchedulerSettings`` the engine config is built from (read-only)."""

    @property
    def score_weights(self) -> Mapping[str, int]: ...
    @property
    def headroom(self) -> Mapping[str, HeadroomLike]: ...
    @property
    def profiles(self) -> Mapping[str, ProfileLike]: ...
    @property
    def default_profile(self) -> str: ...
    @property
    def resource_fit(self) -> bool: ...
    @property
    def enable_empty_workload_propagation(self) -> bool: ...


def engine_config(settings: SchedulerSettingsLike) -> EngineConfig:
    """``EngineConfig`` from the scheduler settings (headroom floors parsed as quantities)."""
    headroom = headroom_rules(settings.headroom)
    weights = dict(settings.score_weights)
    profiles = {
        name: ServiceProfile(
            score_weights=dict(weights if profile.score_weights is None else profile.score_weights),
            headroom=headroom if profile.headroom is None else headroom_rules(profile.headroom),
        )
        for name, profile in settings.profiles.items()
    }
    return EngineConfig(
        score_weights=weights,
        headroom=headroom,
        profiles=profiles,
        default_profile=settings.default_profile,
        resource_fit=settings.resource_fit,
        enable_empty_workload_propagation=settings.enable_empty_workload_propagation,
    )


def headroom_rules(rules: Mapping[str, HeadroomLike]) -> dict[str, Headroom]:
    return {resource: _headroom(resource, rule) for resource, rule in rules.items()}


def _headroom(resource: str, rule: HeadroomLike) -> Headroom:
    floor = to_milli(rule.floor) if resource == CPU else to_int(rule.floor)
    return Headroom(
        percent=float(rule.percent), floor=floor, strict=rule.strict, request_factor=rule.request_factor
    )


def service_class_of(template: Mapping[str, Any] | None) -> str:
    """The workload's service class: its own annotation, else its pod template's; "" for none."""
    if template is None:
        return ""
    found = _annotation(template.get("metadata"))
    if found:
        return found
    spec = template.get("spec")
    pod_template = spec.get("template") if isinstance(spec, Mapping) else None
    return _annotation(pod_template.get("metadata")) if isinstance(pod_template, Mapping) else ""


def _annotation(meta: Any) -> str:
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(SERVICE_CLASS_ANNOTATION) if isinstance(annotations, Mapping) else None
    return value.strip() if isinstance(value, str) else ""
