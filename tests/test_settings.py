"""Settings: defaults match config/federation.yaml, the environment beats the file, flags beat both."""

from pathlib import Path

import pytest
import yaml

from federation.settings import Settings, load_settings

REPO = Path(__file__).resolve().parents[1]


def test_documented_file_states_every_default() -> None:
    documented = yaml.safe_load((REPO / "config" / "federation.yaml").read_text())
    defaults = Settings().model_dump(mode="json")
    documented.pop("data_dir")
    defaults.pop("data_dir")
    assert documented == defaults


def test_environment_beats_file_and_flags_beat_environment(tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "f.yaml"
    config.write_text("controllers: {status_interval_seconds: 3}\napi: {port: 9000}\n")
    monkeypatch.setenv("FEDERATION_CONTROLLERS__STATUS_INTERVAL_SECONDS", "7")
    monkeypatch.setenv("FEDERATION_API__PORT", "9100")
    settings = load_settings(config, api={"port": 9200})
    assert settings.controllers.status_interval_seconds == 7
    assert settings.api.port == 9200


def test_default_database_is_sqlite_under_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings(data_dir=str(tmp_path))
    assert settings.resolved_database_url() == f"sqlite:///{tmp_path / 'federation.db'}"


def test_unknown_setting_is_refused_with_its_name(tmp_path: Path) -> None:
    config = tmp_path / "f.yaml"
    config.write_text("controllers: {status_intervl: 3}\n")
    with pytest.raises(ValueError, match="status_intervl"):
        load_settings(config)


DATABASE_SCHEDULER = REPO / "config" / "profiles" / "database-scheduler.yaml"


def test_the_shipped_database_scheduler_profiles_load(monkeypatch) -> None:
    monkeypatch.setenv("FEDERATION_CONFIG", str(DATABASE_SCHEDULER))
    scheduler = load_settings().scheduler
    assert sorted(scheduler.profiles) == ["mysql", "pika", "redis"]
    mysql = scheduler.profiles["mysql"]
    assert mysql.score_weights == {"ClusterLocality": 1, "MoreFreeMemoryRatio": 1_000_000}
    assert mysql.headroom is not None and mysql.headroom["ephemeral-storage"].floor == "250Gi"
    assert scheduler.profiles["pika"].score_weights is None  # takes the top-level weights


def test_resource_fit_is_on_by_default_and_the_environment_turns_it_off(monkeypatch) -> None:
    assert load_settings().scheduler.resource_fit is True
    monkeypatch.setenv("FEDERATION_SCHEDULER__RESOURCE_FIT", "false")
    assert load_settings().scheduler.resource_fit is False


VALID_PLUGINS = "BalancedAllocation, ClusterLocality, LeastAllocated, MoreFreeMemoryRatio, MostFreeMemory"


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        (
            "scheduler: {score_weights: {MostFreeMemroy: 1}}",
            "scheduler.score_weights",
            f"unknown score plugin 'MostFreeMemroy'; valid: {VALID_PLUGINS}",
        ),
        (
            "scheduler: {profiles: {mysql: {score_weights: {MoreMem: 1000000}}}}",
            "scheduler.profiles.mysql.score_weights",
            f"unknown score plugin 'MoreMem'; valid: {VALID_PLUGINS}",
        ),
        (
            "scheduler: {profiles: {mysql: {}, redis: {}}, default_profile: mysqll}",
            "scheduler",
            "default_profile 'mysqll' names no profile; defined: mysql, redis",
        ),
        ("scheduler: {profiles: {'my sql': {}}}", "scheduler.profiles", "profile name 'my sql' must be"),
        ("scheduler: {headroom: {memory: {floor: 10GB}}}", "scheduler.headroom.memory.floor", "10GB"),
        (
            "scheduler: {headroom: {memory: {request_factor: 0}}}",
            "request_factor",
            "greater than or equal to 1",
        ),
        ("scheduler: {profiles: {mysql: {headroom: {cpu: {stict: true}}}}}", "stict", "Extra inputs"),
    ],
)
def test_bad_scheduler_settings_are_refused_naming_the_field(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    config = tmp_path / "f.yaml"
    config.write_text(text + "\n")
    with pytest.raises(ValueError) as refused:
        load_settings(config)
    assert field in str(refused.value) and message in str(refused.value)
