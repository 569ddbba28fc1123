"""HTTP scheduler extenders: the httpx adapter behind ``federation.scheduling.extender.Extender``.

Settings entry (one per extender; camelCase as in kube-scheduler's ``Extender`` config)::

    urlPrefix: http://gpu-extender:8888/scheduler   # required
    filterVerb: filter            # POST {urlPrefix}/{filterVerb}; omitted → no filtering
    prioritizeVerb: prioritize    # omitted → no scores
    replicasVerb: replicas        # omitted → no capacity bound
    weight: 1                     # multiplies the 0..10 priority (scaled to 0..100)
    httpTimeout: 5s               # seconds (number) or "500ms"/"5s"/"1m"
    clusterCacheCapable: false    # true → send clusterNames only
    ignorable: false              # true → an error skips this extender instead of failing the attempt
    managedResources: []          # kinds, "group/version/Kind" or resource names; empty → every binding

Invariants: every network error, timeout, non-2xx status, undecodable body or ``error`` field becomes an
``ExtenderError``; the engine decides (ignorable or not). One ``httpx.Client`` per extender, reused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from federation.scheduling.extender import (
    ExtenderError,
    ExtenderFilterResult,
    HostPriority,
    extender_args,
    parse_filter_result,
    parse_priorities,
    parse_replicas,
)
from federation.scheduling.types import BindingInput, ClusterSnapshot

_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s|m)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}


def parse_timeout(value: Any) -> float:
    """``5``, ``"5s"``, ``"500ms"``, ``"1m"`` → seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value).strip())
    if match is None:
        raise ValueError(f"invalid httpTimeout {value!r}: expected seconds or a duration like 500ms, 5s, 1m")
    return float(match["n"]) * _UNITS[match["unit"]]


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    replicas_verb: str = ""
    weight: int = 1
    http_timeout: float = 5.0
    cluster_cache_capable: bool = False
    ignorable: bool = False
    managed_resources: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, entry: Mapping[str, Any]) -> ExtenderConfig:
        """Build from a settings entry (camelCase keys); ValueError names the bad key."""
        if not entry.get("urlPrefix"):
            raise ValueError("extender: urlPrefix is required")
        managed = tuple(
            str(m["name"] if isinstance(m, Mapping) else m) for m in entry.get("managedResources") or ()
        )
        return cls(
            url_prefix=str(entry["urlPrefix"]).rstrip("/"),
            filter_verb=str(entry.get("filterVerb") or ""),
            prioritize_verb=str(entry.get("prioritizeVerb") or ""),
            replicas_verb=str(entry.get("replicasVerb") or ""),
            weight=int(entry.get("weight", 1)),
            http_timeout=parse_timeout(entry.get("httpTimeout", 5.0)),
            cluster_cache_capable=bool(entry.get("clusterCacheCapable", False)),
            ignorable=bool(entry.get("ignorable", False)),
            managed_resources=managed,
        )


class HttpExtender:
    """An ``Extender`` that POSTs JSON to ``{urlPrefix}/{verb}``."""

    def __init__(self, config: ExtenderConfig, client: httpx.Client | None = None) -> None:
        self.config = config
        self._client = client or httpx.Client(timeout=config.http_timeout)

    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def weight(self) -> int:
        return self.config.weight

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    def close(self) -> None:
        self._client.close()

    def is_interested(self, binding: BindingInput) -> bool:
        managed = set(self.config.managed_resources)
        if not managed:
            return True
        wanted = {binding.kind, binding.gvk, *(r for r, q in binding.resource_request.items() if q > 0)}
        return bool(managed & wanted)

    def filter(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> ExtenderFilterResult:
        if not self.config.filter_verb:
            return ExtenderFilterResult(tuple(c.name for c in clusters))
        return parse_filter_result(self._post(self.config.filter_verb, binding, clusters))

    def prioritize(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> list[HostPriority]:
        if not self.config.prioritize_verb:
            return []
        return parse_priorities(self._post(self.config.prioritize_verb, binding, clusters))

    def max_replicas(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]
    ) -> Mapping[str, int] | None:
        if not self.config.replicas_verb:
            return None
        return parse_replicas(self._post(self.config.replicas_verb, binding, clusters))

    def _post(self, verb: str, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> Any:
        url = f"{self.config.url_prefix}/{verb}"
        args = extender_args(binding, clusters, self.config.cluster_cache_capable)
        try:
            response = self._client.post(url, json=args, timeout=self.config.http_timeout)
            response.raise_for_status()
            return response.json()
        except httpx.TimeoutException as exc:
            raise ExtenderError(f"POST {url} timed out after {self.config.http_timeout}s") from exc
        except httpx.HTTPError as exc:
            raise ExtenderError(f"POST {url}: {exc}") from exc
        except ValueError as exc:
            raise ExtenderError(f"POST {url}: response is not JSON: {exc}") from exc


def build_extenders(entries: Sequence[Mapping[str, Any]]) -> list[HttpExtender]:
    """One ``HttpExtender`` per settings entry, in order."""
    return [HttpExtender(ExtenderConfig.from_settings(entry)) for entry in entries]
