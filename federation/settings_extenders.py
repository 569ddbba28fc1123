"""The ``scheduler.extenders`` settings: kube-scheduler's extender configuration lifted from nodes to
clusters (README: Scheduler extenders). Its own module so the extender work can evolve it apart from
the other sections."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ExtenderSettings(BaseModel):
    """kube-scheduler's extender contract lifted from nodes to clusters (README: Scheduler extenders).

    Unknown keys are refused by name, like every settings section (a typo must not silently do nothing).
    """

    model_config = ConfigDict(extra="forbid")

    urlPrefix: str  # kube-scheduler's field names, so existing configs read unchanged
    filterVerb: str = ""
    prioritizeVerb: str = ""
    replicasVerb: str = ""
    weight: int = Field(1, ge=0)
    httpTimeout: float = Field(5.0, gt=0)  # seconds
    clusterCacheCapable: bool = False
    ignorable: bool = False
    managedResources: list[str] = Field(default_factory=list)
