"""The collector's tuning (``gc_tuning``): what ``tune`` sets, the settings that drive it (refused by name
when malformed, overridable from the environment) and that `serve` applies them once started."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from federation import gc_tuning
from federation.cli import cmd_serve, server
from federation.cli.main import cli
from federation.settings import load_settings


@pytest.fixture(autouse=True)
def restored_collector() -> Iterator[None]:
    """Every test leaves the collector as it found it (thresholds, nothing frozen)."""
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_tune_sets_the_thresholds_and_freezes_what_is_alive() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc_tuning.tune()
    assert gc.get_threshold() == gc_tuning.DEFAULT_THRESHOLDS
    assert gc.get_freeze_count() > 1000  # the test process's modules, at least


def test_empty_thresholds_keep_cpythons_and_freeze_false_freezes_nothing() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc_tuning.tune([], freeze=False)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_process_settings_default_to_the_tuned_values_and_come_from_the_environment(monkeypatch) -> None:
    assert tuple(load_settings().process.gc_thresholds) == gc_tuning.DEFAULT_THRESHOLDS
    monkeypatch.setenv("FEDERATION_PROCESS__GC_THRESHOLDS", "[1000, 5, 5]")
    monkeypatch.setenv("FEDERATION_PROCESS__GC_FREEZE_AT_START", "false")
    process = load_settings().process
    assert (process.gc_thresholds, process.gc_freeze_at_start) == ([1000, 5, 5], False)


@pytest.mark.parametrize("bad", ["[0, 10, 10]", "[1000, 10]", "[1000, -1, 10]"])
def test_malformed_thresholds_are_refused_naming_the_field(monkeypatch, bad: str) -> None:
    monkeypatch.setenv("FEDERATION_PROCESS__GC_THRESHOLDS", bad)
    with pytest.raises(ValueError, match="gc_thresholds"):
        load_settings()


def test_serve_tunes_the_collector_once_started(monkeypatch, tmp_path) -> None:
    """`serve` applies the process settings after it has started and before it serves."""
    order: list[str] = []

    class StartedProcess:
        def __init__(
            self, settings, run_controllers: bool, controllers_apart: bool, controller_process
        ) -> None:
            self.settings = settings

        def request_stop(self, signum: int) -> None:  # pragma: no cover - no signal in this test
            pass

        def open(self) -> None:
            order.append("open")

        def run(self) -> None:
            order.append(f"run with thresholds {gc.get_threshold()}")

    monkeypatch.setattr(server, "ServerProcess", StartedProcess)
    monkeypatch.setattr(cmd_serve, "announce", lambda process: order.append("announce"))
    monkeypatch.setattr(server, "tune_malloc", lambda: None)
    monkeypatch.setenv("FEDERATION_PROCESS__GC_THRESHOLDS", "[4321, 11, 12]")
    monkeypatch.setenv("FEDERATION_PROCESS__GC_FREEZE_AT_START", "false")
    result = CliRunner().invoke(cli, ["serve", "--data-dir", str(tmp_path), "--insecure-http"])
    assert result.exit_code == 0, result.output
    assert order == ["open", "announce", "run with thresholds (4321, 11, 12)"]


def test_tune_collector_reads_the_process_section() -> None:
    settings = SimpleNamespace(process=SimpleNamespace(gc_thresholds=[2000, 3, 4], gc_freeze_at_start=False))
    server.tune_collector(settings)  # type: ignore[arg-type]
    assert gc.get_threshold() == (2000, 3, 4)
