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
