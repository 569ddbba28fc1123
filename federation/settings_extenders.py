"""The ``scheduler.extenders`` settings: kube-scheduler's ``Extender`` configuration, accepted unchanged and
lifted from nodes to clusters (README: Scheduler extenders). Its own module so the extender settings evolve
apart from the other sections.

kube-scheduler's own keys read as they are: ``urlPrefix``, ``filterVerb``, ``prioritizeVerb``, ``bindVerb``,
``preemptVerb``, ``weight``, ``enableHTTPS``, ``tlsConfig`` (``insecure``, ``serverName``, ``certFile``,
``keyFile``, ``caFile``, ``certData``, ``keyData``, ``caData``), ``httpTimeout`` (a Go duration such as
``"30s"`` or ``"1m30s"``), ``nodeCacheCapable``, ``managedResources`` (``[{name, ignoredByScheduler}]``) and
``ignorable``. The federation adds ``replicasVerb``, ``apiVersion`` (the wire the extender speaks: ``v1`` is
kube-scheduler's ``ExtenderArgs`` with clusters as Nodes, ``federation.io/v1`` the cluster-shaped default),
and also accepts ``clusterCacheCapable`` for ``nodeCacheCapable``, plain names in ``managedResources`` and a
number of seconds for ``httpTimeout``.

Invariants:
- Unknown keys are refused by name, like every settings section (a typo must not silently do nothing).
- A validated entry dumps to a form that validates to the same entry (``load_settings`` re-validates a
  section after applying flags): ``nodeCacheCapable`` folds into ``clusterCacheCapable``, durations into
  seconds, plain managed-resource names into ``{name}``, base64 ``*Data`` into PEM text.
- kube-scheduler's own validation holds: a prioritizing extender has a positive weight, a managed resource is
  named once, ``httpTimeout`` 0 means the 5 s default; client-go's: ``insecure`` with a CA is refused, a file
  and its ``*Data`` form are not both given, a client certificate comes with its key. The rule across
  entries (at most one extender implements bind) is checked where the list is built
  (``federation.extenders.build_extenders``); files are read there too (this module does no I/O).
- ``preemptVerb`` is refused (see ``PREEMPT_REFUSED``): an accepted verb that is never called would be a
  setting that silently does nothing.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

WireVersion = Literal["v1", "federation.io/v1"]
KUBE_WIRE: WireVersion = "v1"
CLUSTER_WIRE: WireVersion = "federation.io/v1"
# kube-scheduler's DefaultExtenderTimeout; a configured 0 means this too.
DEFAULT_HTTP_TIMEOUT_SECONDS = 5.0
PREEMPT_REFUSED = (
    "not supported: the federation scheduler never preempts (evicting lower-priority bindings to place "
    "another has no counterpart in Karmada's scheduler), so the verb would never be called; remove "
    "preemptVerb or leave it empty"
)

_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_BARE_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")


def duration_seconds(value: Any) -> float:
    """``httpTimeout`` → seconds: a number of seconds, or a Go duration (``"500ms"``, ``"30s"``, ``"1m30s"``,
    as kube-scheduler's ``metav1.Duration`` is written); 0 means kube-scheduler's 5 s default."""
    if isinstance(value, bool):
        raise ValueError(f"expected seconds or a duration like 500ms, 30s, 1m; got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        seconds = _parse_go_duration(str(value).strip())
    if seconds < 0:
        raise ValueError(f"must not be negative; got {value!r}")
    return seconds or DEFAULT_HTTP_TIMEOUT_SECONDS


def _parse_go_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` (no sign: a timeout is never negative), plus a bare number as seconds."""
    if _BARE_NUMBER.fullmatch(text):
        return float(text)
    total, position = 0.0, 0
    for match in _GO_DURATION_PART.finditer(text):
        if match.start() != position:
            break
        total += float(match[1]) * _GO_UNIT_SECONDS[match[2]]
        position = match.end()
    if position != len(text) or not text:
        raise ValueError(f"expected seconds or a duration like 500ms, 30s, 1m30s; got {text!r}")
    return total


def pem_text(value: Any) -> str:
    """A ``*Data`` value as PEM text: PEM as it is, or base64 of PEM (kube-scheduler's ``[]byte`` fields are
    written base64-encoded in its YAML and JSON)."""
    text = value.decode() if isinstance(value, bytes) else str(value)
    if "-----BEGIN" in text:
        return text
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        decoded = ""
    if "-----BEGIN" not in decoded:
        raise ValueError("expected PEM text or base64-encoded PEM (as kube-scheduler writes []byte fields)")
    return decoded


class ExtenderTLSSettings(BaseModel):
    """kube-scheduler's ``ExtenderTLSConfig`` (client-go's ``TLSClientConfig``)."""

    model_config = ConfigDict(extra="forbid")

    insecure: bool = False
    serverName: str = ""
    certFile: str = ""
    keyFile: str = ""
    caFile: str = ""
    certData: str = ""
    keyData: str = ""
    caData: str = ""

    @field_validator("certData", "keyData", "caData", mode="before")
    @classmethod
    def _pem(cls, value: Any) -> Any:
        return pem_text(value) if value else value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        for part in ("cert", "key", "ca"):
            if getattr(self, f"{part}File") and getattr(self, f"{part}Data"):
                raise ValueError(f"give {part}File or {part}Data, not both")
        if self.insecure and (self.caFile or self.caData):
            raise ValueError("insecure: true with caFile/caData is refused (client-go's rule): drop one")
        if bool(self.certFile or self.certData) != bool(self.keyFile or self.keyData):
            raise ValueError("a client certificate needs both certFile/certData and keyFile/keyData")
        return self


class ManagedResource(BaseModel):
    """kube-scheduler's ``ExtenderManagedResource``; ``ignoredByScheduler`` resources are left out of the
    federation's own fit and capacity estimate, so only the extender judges them."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    ignoredByScheduler: bool = False


def _named(value: Any) -> Any:
    """A plain name stands for ``{name: <it>}`` (the federation's short form)."""
    return {"name": value} if isinstance(value, str) else value


class ExtenderSettings(BaseModel):
    """One extender: kube-scheduler's ``Extender`` keys, lifted from nodes to clusters."""

    model_config = ConfigDict(extra="forbid")

    urlPrefix: str
    apiVersion: WireVersion = CLUSTER_WIRE
    filterVerb: str = ""
    prioritizeVerb: str = ""
    replicasVerb: str = ""
    bindVerb: str = ""
    preemptVerb: str = ""
    weight: int = Field(1, ge=0)
    httpTimeout: Annotated[float, BeforeValidator(duration_seconds)] = DEFAULT_HTTP_TIMEOUT_SECONDS
    clusterCacheCapable: bool = False
    ignorable: bool = False
    managedResources: list[Annotated[ManagedResource, BeforeValidator(_named)]] = Field(default_factory=list)
    enableHTTPS: bool = False
    tlsConfig: ExtenderTLSSettings | None = None

    @model_validator(mode="before")
    @classmethod
    def _node_cache_alias(cls, data: Any) -> Any:
        """kube-scheduler's ``nodeCacheCapable`` is ``clusterCacheCapable`` here."""
        if not isinstance(data, dict) or "nodeCacheCapable" not in data:
            return data
        data = dict(data)
        value = data.pop("nodeCacheCapable")
        if "clusterCacheCapable" in data and data["clusterCacheCapable"] != value:
            raise ValueError("nodeCacheCapable and clusterCacheCapable are the same setting; they disagree")
        data["clusterCacheCapable"] = value
        return data

    @field_validator("urlPrefix")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"expected an http:// or https:// URL; got {value!r}")
        return value

    @field_validator("preemptVerb")
    @classmethod
    def _no_preemption(cls, value: str) -> str:
        if value:
            raise ValueError(PREEMPT_REFUSED)
        return value

    @model_validator(mode="after")
    def _kube_rules(self) -> Self:
        if self.prioritizeVerb and self.weight <= 0:
            raise ValueError("weight: an extender with a prioritizeVerb must have a positive weight")
        names = [r.name for r in self.managedResources]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"managedResources: duplicate name(s) {', '.join(repeated)}")
        return self

    @property
    def ignored_resources(self) -> frozenset[str]:
        """Resources the federation's own fit leaves to this extender (``ignoredByScheduler``)."""
        return frozenset(r.name for r in self.managedResources if r.ignoredByScheduler)
