"""``HttpExtender``: one configured extender over httpx, as kube-scheduler's ``HTTPExtender`` calls it.

Every call is ``POST {urlPrefix}/{verb}`` with a JSON body in the extender's wire (``apiVersion``:
``federation.io/v1`` → ``cluster_wire``, ``v1`` → ``kube_wire``); a verb left empty is not called (filter
keeps every cluster, prioritize scores nothing, replicas bounds nothing).

Invariants:
- Every network error, timeout (``httpTimeout``), answer other than 200 (kube-scheduler's rule: 201 is an
  error too), undecodable body or ``error`` field becomes an ``ExtenderError``; the engine decides what it
  costs (``ignorable`` or not).
- One ``httpx.Client`` per extender, reused for every call and closed by ``close``; its TLS context is
  built at construction, so bad certificates fail at start.
- ``name`` is the ``urlPrefix`` (kube-scheduler's ``Name()``): explanations and errors say which extender.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import httpx

from federation.extenders.cluster_wire import ClusterWire, parse_bind_result, parse_replicas
from federation.extenders.kube_wire import KubeWire
from federation.extenders.tls import needs_tls, ssl_context
from federation.scheduling.extender import ExtenderError, ExtenderFilterResult, HostPriority
from federation.scheduling.types import BindingInput, ClusterSnapshot, TargetCluster
from federation.settings_extenders import KUBE_WIRE, ExtenderSettings


class Wire(Protocol):
    """How one wire writes requests and reads answers (replicas and bind answers are shared)."""

    def args(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot], names_only: bool
    ) -> dict[str, Any]: ...

    def filter_result(self, body: Any, offered: Sequence[str], names_only: bool) -> ExtenderFilterResult: ...

    def priorities(self, body: Any) -> list[HostPriority]: ...

    def bind_args(self, binding: BindingInput, target: TargetCluster) -> dict[str, Any]: ...


class HttpExtender:
    """An ``Extender`` that POSTs JSON to ``{urlPrefix}/{verb}``."""

    def __init__(self, settings: ExtenderSettings, client: httpx.Client | None = None) -> None:
        self.settings = settings
        self.url_prefix = settings.urlPrefix.rstrip("/")
        self._wire: Wire = KubeWire() if settings.apiVersion == KUBE_WIRE else ClusterWire()
        self._managed = frozenset(r.name for r in settings.managedResources)
        self._ignored = settings.ignored_resources
        server_name = settings.tlsConfig.serverName if settings.tlsConfig else ""
        self._extensions = {"sni_hostname": server_name} if server_name else {}
        if client is None:
            verify = ssl_context(settings) if needs_tls(settings) else True
            client = httpx.Client(timeout=settings.httpTimeout, verify=verify)
        self._client = client

    @property
    def name(self) -> str:
        return self.url_prefix

    @property
    def weight(self) -> int:
        return self.settings.weight

    @property
    def ignorable(self) -> bool:
        return self.settings.ignorable

    @property
    def binder(self) -> bool:
        return bool(self.settings.bindVerb)

    @property
    def ignored_resources(self) -> frozenset[str]:
        return self._ignored

    def close(self) -> None:
        self._client.close()

    def is_interested(self, binding: BindingInput) -> bool:
        """kube-scheduler's ``IsInterested``: no managed resources → every binding; else a binding that
        requests one of them (or whose kind / ``group/version/Kind`` is listed)."""
        if not self._managed:
            return True
        wanted = {binding.kind, binding.gvk, *(r for r, q in binding.resource_request.items() if q > 0)}
        return bool(self._managed & wanted)

    def filter(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> ExtenderFilterResult:
        if not self.settings.filterVerb:
            return ExtenderFilterResult(tuple(c.name for c in clusters))
        names_only = self.settings.clusterCacheCapable
        body = self._call(self.settings.filterVerb, self._wire.args(binding, clusters, names_only))
        return self._wire.filter_result(body, [c.name for c in clusters], names_only)

    def prioritize(self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]) -> list[HostPriority]:
        if not self.settings.prioritizeVerb:
            return []
        args = self._wire.args(binding, clusters, self.settings.clusterCacheCapable)
        return self._wire.priorities(self._call(self.settings.prioritizeVerb, args))

    def max_replicas(
        self, binding: BindingInput, clusters: Sequence[ClusterSnapshot]
    ) -> Mapping[str, int] | None:
        if not self.settings.replicasVerb:
            return None
        args = self._wire.args(binding, clusters, self.settings.clusterCacheCapable)
        return parse_replicas(self._call(self.settings.replicasVerb, args))

    def bind(self, binding: BindingInput, target: TargetCluster) -> None:
        if not self.settings.bindVerb:
            raise ExtenderError(f"extender {self.name} has no bindVerb")
        parse_bind_result(self._call(self.settings.bindVerb, self._wire.bind_args(binding, target)))

    def _call(self, verb: str, body: dict[str, Any]) -> Any:
        url = f"{self.url_prefix}/{verb}"
        try:
            response = self._client.post(url, json=body, extensions=self._extensions)
        except httpx.TimeoutException as exc:
            raise ExtenderError(f"POST {url} timed out after {self.settings.httpTimeout:g}s") from exc
        except httpx.HTTPError as exc:
            raise ExtenderError(f"POST {url}: {exc}") from exc
        if response.status_code != httpx.codes.OK:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {response.status_code}")
        try:
            return response.json()
        except ValueError as exc:
            raise ExtenderError(f"POST {url}: the answer is not JSON: {exc}") from exc


def build_extenders(entries: Iterable[ExtenderSettings | Mapping[str, Any]]) -> list[HttpExtender]:
    """One ``HttpExtender`` per settings entry, in order; ValueError names the entry and field.

    kube-scheduler's rule across entries: at most one extender implements bind.
    """
    settings = [e if isinstance(e, ExtenderSettings) else ExtenderSettings.model_validate(e) for e in entries]
    binders = [s.urlPrefix for s in settings if s.bindVerb]
    if len(binders) > 1:
        raise ValueError(
            f"scheduler.extenders: only one extender can implement bind; found {len(binders)}: "
            + ", ".join(binders)
        )
    built: list[HttpExtender] = []
    for index, entry in enumerate(settings):
        try:
            built.append(HttpExtender(entry))
        except ValueError as exc:
            close_extenders(built)
            raise ValueError(f"scheduler.extenders[{index}] ({entry.urlPrefix}): {exc}") from exc
    return built


def close_extenders(extenders: Iterable[HttpExtender]) -> None:
    """Close every extender's connections."""
    for extender in extenders:
        extender.close()
