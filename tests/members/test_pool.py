"""MemberClientPool caching and rebuilds, and bounded fan-out that a slow member cannot block."""

from __future__ import annotations

import threading
import time
from typing import Any

from federation.members.errors import MemberError
from federation.members.pool import MemberClientPool, run_concurrently
from federation.sim import RunningSimulator


class FakeClient:
    def __init__(self, name: str, kubeconfig: dict[str, Any]) -> None:
        self.name = name
        self.kubeconfig = kubeconfig
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_clients_are_cached_until_credentials_change() -> None:
    built: list[FakeClient] = []

    def factory(name: str, kubeconfig: dict[str, Any]) -> Any:
        built.append(FakeClient(name, kubeconfig))
        return built[-1]

    pool = MemberClientPool(factory)
    config = {"users": [{"name": "u", "user": {"token": "a"}}]}
    first = pool.get("m1", config)
    assert pool.get("m1", {"users": [{"user": {"token": "a"}, "name": "u"}]}) is first
    rotated = pool.get("m1", {"users": [{"name": "u", "user": {"token": "b"}}]})
    assert rotated is not first and first.closed  # type: ignore[attr-defined]
    assert len(built) == 2 and len(pool) == 1
    pool.evict("m1")
    assert rotated.closed and len(pool) == 0  # type: ignore[attr-defined]


def test_pool_rebuilds_a_real_client_after_token_rotation(sim: RunningSimulator) -> None:
    pool = MemberClientPool()
    good = pool.get("member1", sim.kubeconfig)
    assert good.version() == "v1.32.0"
    stale = sim.kubeconfig
    stale["users"][0]["user"]["token"] = "old"
    broken = pool.get("member1", stale)
    assert broken is not good
    try:
        broken.version()
        raise AssertionError("expected 401")
    except MemberError as err:
        assert err.kind == "unauthorized"
    assert pool.get("member1", sim.kubeconfig).version() == "v1.32.0"
    pool.close()


def test_run_concurrently_returns_values_errors_and_timeouts() -> None:
    release = threading.Event()

    def work(name: str) -> str:
        if name == "slow":
            release.wait(5)
        if name == "bad":
            raise MemberError(name, "boom")
        return name.upper()

    started = time.monotonic()
    outcomes = run_concurrently(work, ["a", "slow", "bad", "b"], max_workers=4, timeout=0.3)
    assert time.monotonic() - started < 2
    release.set()
    assert outcomes["a"].value == "A" and outcomes["b"].value == "B"
    assert not outcomes["bad"].ok and "boom" in str(outcomes["bad"].error)
    slow_error = outcomes["slow"].error
    assert isinstance(slow_error, MemberError) and slow_error.kind == "timeout"


def test_run_concurrently_bounds_parallelism() -> None:
    lock = threading.Lock()
    active, peak = 0, 0

    def work(name: str) -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1

    outcomes = run_concurrently(work, [f"c{i}" for i in range(8)], max_workers=2, timeout=5)
    assert all(o.ok for o in outcomes.values()) and peak == 2


def test_a_dead_member_does_not_block_the_live_ones(start_sim: Any) -> None:
    live, slow = start_sim(name="live"), start_sim(name="slow", latency_ms=3000)
    pool = MemberClientPool()
    configs = {"live": live.kubeconfig, "slow": slow.kubeconfig}
    started = time.monotonic()
    outcomes = run_concurrently(
        lambda n: pool.get(n, configs[n]).version(), configs, max_workers=2, timeout=1
    )
    assert time.monotonic() - started < 2.5
    assert outcomes["live"].value == "v1.32.0"
    assert not outcomes["slow"].ok
