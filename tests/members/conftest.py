"""Fixtures for member-cluster tests: simulators on 127.0.0.1 (real sockets, TLS), stopped after each test."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from federation.sim import RunningSimulator


@pytest.fixture
def sim(start_sim: Callable[..., RunningSimulator]) -> RunningSimulator:
    return start_sim()
