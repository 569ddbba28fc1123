"""Fixtures for member-cluster tests: simulators on 127.0.0.1 (real sockets, TLS), stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from federation.members.sim import RunningSimulator, run_simulator_in_thread
from tests.members.helpers import make_config


@pytest.fixture
def start_sim() -> Iterator[Callable[..., RunningSimulator]]:
    """Start simulators with ``start_sim(**config_overrides)``; all are stopped after the test."""
    running: list[RunningSimulator] = []

    def start(**overrides: Any) -> RunningSimulator:
        sim = run_simulator_in_thread(make_config(**overrides))
        running.append(sim)
        return sim

    yield start
    for sim in running:
        sim.stop()


@pytest.fixture
def sim(start_sim: Callable[..., RunningSimulator]) -> RunningSimulator:
    return start_sim()
