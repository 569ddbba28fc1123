"""Settings: every knob of the service, with Karmada's default where one exists.

Precedence, highest first: environment variables `FEDERATION_*` (nested sections joined with `__`, e.g.
`FEDERATION_CONTROLLERS__STATUS_INTERVAL_SECONDS=5`), then the YAML file given by `--config` (or
`FEDERATION_CONFIG`), then the defaults below. `config/federation.yaml` documents the same defaults and
must stay in step with this module (a test compares them).

This module does no I/O beyond reading the YAML file; paths are resolved, not created.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from federation.gc_tuning import DEFAULT_THRESHOLDS as DEFAULT_GC_THRESHOLDS
from federation.model.quantity import to_milli
from federation.paths import KUBECONFIG_NAME, default_data_dir
from federation.scheduling.types import DEFAULT_SCORE_WEIGHTS, check_score_weights
from federation.settings_extenders import ExtenderSettings


def legacy_client_config_path() -> Path:
    """Where older versions wrote the server URL and token (read once to carry the admin token over)."""
    explicit = os.environ.get("FEDERATION_CLIENT_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "federation" / "client.yaml"


class Section(BaseModel):
    """A settings section: unknown keys are refused by name (a typo must not silently do nothing)."""

    model_config = ConfigDict(extra="forbid")


class ApiSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(7080, ge=0, le=65535)
    # The URL clients should use when it differs from host:port (behind a proxy, in a container).
    advertise_url: str | None = None
    page_size_max: int = Field(500, ge=1)
    # kube-apiserver's --max-request-bytes: a larger request body is refused (413) before it is read whole.
    max_request_body_bytes: int = Field(3 * 1024 * 1024, ge=1)
    # HTTPS is the default (kubectl sends a bearer token only over TLS). Without these two files a CA and a
    # serving certificate are made under <data_dir>/pki at first start (kube-apiserver's --tls-cert-file,
    # --tls-private-key-file).
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    # The CA that signed tls_cert_file, written into the kubeconfig; none: the system roots verify it.
    tls_ca_file: Path | None = None
    # Plain HTTP, only on request (behind a proxy that terminates TLS): kubectl then never sends the token.
    insecure_http: bool = False
    # Watch (``?watch=1``): how long the change log keeps events (a watch from an older resourceVersion gets
    # 410 Expired and relists; kube-apiserver compacts etcd every 5m), how often it is read while a watch is
    # open (with none open: every 5 s, and before each list; ``api.watchhub``), how long a
    # watch without ``timeoutSeconds`` lasts (kube-apiserver's --min-request-timeout) and how often a watch
    # with ``allowWatchBookmarks`` hears a BOOKMARK when nothing else happened.
    watch_window_seconds: float = Field(300.0, gt=0)
    watch_poll_seconds: float = Field(0.2, gt=0)
    watch_timeout_seconds: float = Field(1800.0, gt=0)
    watch_bookmark_seconds: float = Field(60.0, gt=0)
    # A token that authenticated is not looked up again for this long (``store.tokens.TokenCache``): expiry
    # is still checked on every request and a revocation made in this process applies at once, but one made
    # elsewhere (``federation token revoke``, another replica) applies within this many seconds. 0: every
    # request looks its token up.
    token_cache_seconds: float = Field(5.0, ge=0)

    @model_validator(mode="after")
    def _tls_files_together(self) -> ApiSettings:
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            raise ValueError("tls_cert_file and tls_private_key_file go together: give both or neither")
        if self.insecure_http and (self.tls_cert_file or self.tls_ca_file):
            raise ValueError("insecure_http serves plain HTTP: it takes no tls_cert_file or tls_ca_file")
        return self


class SecretSettings(Section):
    # A Fernet key (urlsafe base64, 32 bytes). When empty, a key file under the data directory is used,
    # created with mode 0600 on first start.
    encryption_key: str | None = None
    key_file: Path | None = None


class DatabaseSettings(Section):
    """How long the store waits on the database (0: no limit). Postgres: ``connect_timeout`` per
    connection, ``statement_timeout`` and ``lock_timeout`` per session; SQLite: its busy timeout."""

    connect_timeout_seconds: float = Field(10.0, ge=0)
    statement_timeout_seconds: float = Field(60.0, ge=0)
    lock_timeout_seconds: float = Field(10.0, ge=0)
    sqlite_busy_timeout_seconds: float = Field(30.0, ge=0)
    # Connections a server process keeps open (and may open beyond, under load). Every controller runs in
    # its own thread and the API in a thread pool: at a start all of them want one at once, and a request
    # or a pass waiting for a free connection is the latency nobody sees in a profile.
    pool_size: int = Field(20, ge=1)
    max_overflow: int = Field(10, ge=0)
    # Postgres without autovacuum: the leader vacuums and analyzes the store's tables as autovacuum would
    # (``store.maintenance``), checking every so many seconds. With autovacuum on, a check finds nothing.
    self_maintenance: bool = True
    maintenance_interval_seconds: float = Field(15.0, gt=0)


class ControllerSettings(Section):
    """Timing of the reconcilers. Defaults follow Karmada's flags (karmada-semantics.md §11)."""

    status_interval_seconds: float = Field(10.0, gt=0)  # --cluster-status-update-frequency
    failure_threshold_seconds: float = Field(30.0, ge=0)  # --cluster-failure-threshold
    success_threshold_seconds: float = Field(30.0, ge=0)  # --cluster-success-threshold
    lease_duration_seconds: float = Field(40.0, gt=0)  # --cluster-lease-duration
    monitor_grace_period_seconds: float = Field(40.0, gt=0)  # --cluster-monitor-grace-period
    graceful_eviction_timeout_seconds: float = Field(600.0, gt=0)  # --graceful-eviction-timeout
    scheduler_interval_seconds: float = Field(1.0, gt=0)
    execution_interval_seconds: float = Field(1.0, gt=0)
    work_sync_interval_seconds: float = Field(2.0, gt=0)
    detector_interval_seconds: float = Field(1.0, gt=0)
    batch_size: int = Field(100, ge=1)
    # Renewed while the item is worked on: a dead process's claims run out after this.
    claim_lease_seconds: float = Field(15.0, gt=0)
    leader_lease_seconds: float = Field(15.0, gt=0)
    retry_backoff_initial_seconds: float = Field(1.0, gt=0)
    retry_backoff_max_seconds: float = Field(300.0, gt=0)
    # `serve` on Postgres runs the controllers in a child process, so API requests never wait for the GIL
    # behind a controller pass (``cli.controller_process``); false: in the serving process. SQLite: always
    # in the serving process (one writer at a time).
    separate_process: bool = True
    # The niceness the controllers' child process adds to its own (``os.nice``): on a machine short of cores
    # the API's requests, which someone waits for, go before controller passes, which no one watches.
    # 0: the same priority as the API.
    process_niceness: int = Field(5, ge=0, le=19)


class FailoverSettings(Section):
    """Moving workloads away from failed clusters and failed workloads (Karmada's taint manager and
    application failover). Karmada ships failover off; here it is on, and ``enabled: false`` turns every
    eviction off (taints are still set, nothing moves)."""

    enabled: bool = True
    # Karmada's --default-not-ready-toleration-seconds / --default-unreachable-toleration-seconds: a
    # placement without its own toleration for those NoExecute taints tolerates them this long.
    default_not_ready_toleration_seconds: int = Field(300, ge=0)
    default_unreachable_toleration_seconds: int = Field(300, ge=0)
    # Evictions per second while the federation is healthy (0: unlimited). Karmada: --resource-eviction-rate.
    eviction_rate_per_second: float = Field(0.0, ge=0)
    # More than this share of clusters unhealthy at once: more likely our own network than the fleet.
    unhealthy_cluster_threshold: float = Field(0.55, ge=0, le=1)
    # Evictions per second while over the threshold (0: paused). Karmada: --secondary-eviction-rate.
    secondary_eviction_rate_per_second: float = Field(0.0, ge=0)
    # The taint manager's purge mode for a binding without a ``spec.failover.cluster`` block (with one, its
    # ``purgeMode``, empty = Gracefully, wins). Karmada: --no-execute-taint-eviction-purge-mode.
    no_execute_taint_eviction_purge_mode: Literal["Gracefully", "Directly"] = "Gracefully"
    # Application failover: a workload that ran Healthy this long before failing resets its budget.
    reset_after_seconds: float = Field(1800.0, ge=0)
    # How often the taint manager, graceful eviction and application failover look at due work.
    interval_seconds: float = Field(1.0, gt=0)


class MemberSettings(Section):
    request_timeout_seconds: float = Field(10.0, gt=0)
    probe_timeout_seconds: float = Field(5.0, gt=0)
    max_concurrency: int = Field(8, ge=1)
    # Work sync: requests in flight to one member at a time (Works of one cluster applied side by side).
    applies_in_flight_per_cluster: int = Field(4, ge=1)
    # Work status from a watch per member and kind (informers); false: a round of LISTs every interval.
    status_watch: bool = True


class ProcessSettings(Section):
    """The Python process itself (``gc_tuning``): `serve` and `up` apply these once started."""

    # gc.set_threshold; [] keeps CPython's (700, 10, 10), which cost a third of a busy pass (RESULTS.md).
    gc_thresholds: list[int] = Field(default_factory=lambda: list(DEFAULT_GC_THRESHOLDS))
    gc_freeze_at_start: bool = True

    @field_validator("gc_thresholds")
    @classmethod
    def _three_thresholds(cls, value: list[int]) -> list[int]:
        if value and (len(value) != 3 or value[0] < 1 or min(value) < 0):
            raise ValueError("give three numbers (young >= 1, the other two >= 0), or [] for CPython's own")
        return value


class EventSettings(Section):
    """Retention of recorded Events (kube-apiserver keeps them an hour: --event-ttl). A periodic job deletes
    the expired ones, and the oldest beyond ``max_count``, ``prune_batch_size`` rows per statement."""

    ttl_seconds: float = Field(3600.0, gt=0)
    max_count: int = Field(100_000, ge=1)
    prune_interval_seconds: float = Field(60.0, gt=0)
    prune_batch_size: int = Field(1000, ge=1)


class DecisionSettings(EventSettings):
    """Retention of scheduling decision records (``describe rb``, ``/federation/v1/decisions``): a week,
    and at most ``max_count``; the scheduler's back-off reads only a binding's latest few."""

    ttl_seconds: float = Field(7 * 86400.0, gt=0)
    max_count: int = Field(200_000, ge=1)


class HeadroomRule(Section):
    """A fit rule for one resource: after each replica's request (times ``request_factor``) keep the hold
    free, hold = the larger of ``percent`` of allocatable and ``floor``; ``strict`` keeps more than it."""

    percent: float = Field(0.0, ge=0, le=100)
    floor: str = "0"
    strict: bool = False
    request_factor: int = Field(1, ge=1)

    @field_validator("floor", mode="before")
    @classmethod
    def _quantity(cls, value: Any) -> str:
        text = str(value)
        if to_milli(text) < 0:  # ValueError naming the value for anything not a quantity
            raise ValueError(f"{text!r} is negative")
        return text


def _known_score_plugins(weights: dict[str, int] | None) -> dict[str, int] | None:
    if weights is not None:
        check_score_weights(weights)
    return weights


# A profile is named by the value of the service-class annotation: a label-value-like name.
PROFILE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


class ProfileSettings(Section):
    """A service class's rules (README: Service-class profiles); a field left out takes the top-level one."""

    score_weights: dict[str, int] | None = None
    headroom: dict[str, HeadroomRule] | None = None

    _score_weights = field_validator("score_weights")(_known_score_plugins)


class SchedulerSettings(Section):
    # Score plugin weights of the default profile; a weight of 0 turns a plugin off.
    score_weights: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))
    # Fit rules of the default profile, per resource.
    headroom: dict[str, HeadroomRule] = Field(default_factory=dict)
    # A replica that does not fit filters the cluster (every requested resource and a pod slot);
    # false: Karmada's behaviour (only headroom rules filter).
    resource_fit: bool = True
    # Per service class (annotation scheduling.federation.io/service-class): its own rules and weights.
    profiles: dict[str, ProfileSettings] = Field(default_factory=dict)
    # The profile of workloads without a class (or with a class no profile names); "": the top level.
    default_profile: str = ""
    extenders: list[ExtenderSettings] = Field(default_factory=list)
    # Karmada's --enable-empty-workload-propagation.
    enable_empty_workload_propagation: bool = False

    _score_weights = field_validator("score_weights")(_known_score_plugins)

    @field_validator("profiles")
    @classmethod
    def _profile_names(cls, profiles: dict[str, ProfileSettings]) -> dict[str, ProfileSettings]:
        for name in profiles:
            if not PROFILE_NAME.match(name):
                raise ValueError(
                    f"profile name {name!r} must be 1-63 letters, digits, '-', '_' or '.', starting and "
                    "ending with a letter or digit (it is matched against an annotation value)"
                )
        return profiles

    @model_validator(mode="after")
    def _default_profile_is_defined(self) -> SchedulerSettings:
        if self.default_profile and self.default_profile not in self.profiles:
            defined = ", ".join(sorted(self.profiles)) or "none"
            raise ValueError(f"default_profile {self.default_profile!r} names no profile; defined: {defined}")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="FEDERATION_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    # Empty means the embedded SQLite file `<data_dir>/federation.db`.
    database_url: str = ""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    secrets: SecretSettings = Field(default_factory=SecretSettings)
    controllers: ControllerSettings = Field(default_factory=ControllerSettings)
    members: MemberSettings = Field(default_factory=MemberSettings)
    process: ProcessSettings = Field(default_factory=ProcessSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    failover: FailoverSettings = Field(default_factory=FailoverSettings)
    events: EventSettings = Field(default_factory=EventSettings)
    decisions: DecisionSettings = Field(default_factory=DecisionSettings)

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment beats the YAML file, which arrives as init kwargs (see load_settings).
        return (env_settings, init_settings)

    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'federation.db'}"

    def resolved_key_file(self) -> Path:
        return self.secrets.key_file or self.data_dir / "secret.key"

    def kubeconfig_path(self) -> Path:
        return self.data_dir / KUBECONFIG_NAME


def load_settings(config_file: Path | str | None = None, **flags: Any) -> Settings:
    """Read the YAML file (if any) under the environment, then apply command-line `flags` on top.

    A flag is a top-level setting (`data_dir=...`) or a section given as a dict (`api={"port": 0}`);
    None means "flag not given".
    """
    path = config_file or os.environ.get("FEDERATION_CONFIG")
    settings = Settings(**(_read_yaml(Path(path)) if path else {}))
    return _apply_flags(settings, {k: v for k, v in flags.items() if v is not None})


def _apply_flags(settings: Settings, flags: dict[str, Any]) -> Settings:
    update: dict[str, Any] = {}
    for key, value in flags.items():
        current = getattr(settings, key)
        if isinstance(value, dict) and isinstance(current, BaseModel):
            given = {k: v for k, v in value.items() if v is not None}
            update[key] = type(current).model_validate({**current.model_dump(), **given})
        else:
            annotation: Any = Settings.model_fields[key].annotation
            update[key] = TypeAdapter(annotation).validate_python(value)
    # model_copy, not a new Settings: constructing one would read the environment again over the flags.
    updated = settings.model_copy(update=update)
    return updated.model_copy(update={"data_dir": updated.data_dir.expanduser()})


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError as exc:
        raise ValueError(f"config file {path} does not exist") from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"config file {path} is not valid YAML: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ValueError(f"config file {path} must hold a mapping of settings")
    return loaded
